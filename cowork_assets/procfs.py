"""What Linux's /proc says about a process: empty answers where a process is gone (or there is no /proc)."""

from __future__ import annotations


def read(path: str) -> bytes:
    """A /proc file's content; empty once the process is gone."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def stat_fields(pid: int) -> list[bytes]:
    """The fields of /proc/<pid>/stat after the command name: state, parent pid, ... (empty once gone)."""
    return read(f"/proc/{pid}/stat").rsplit(b")", 1)[-1].split()
