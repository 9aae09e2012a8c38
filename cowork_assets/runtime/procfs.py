"""What Linux's /proc says about a process (empty answers where a process is gone, or there is no /proc), and
the one process setting the pipeline makes through the kernel."""

from __future__ import annotations

import ctypes
import os
import signal


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


def alive(pid: int) -> bool:
    """Whether `pid` can still write: a killed process stays a zombie until init reaps it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir("/proc"):  # not Linux: kill() is all there is
        return True
    fields = stat_fields(pid)  # empty: reaped meanwhile
    return bool(fields) and fields[0] != b"Z"


def die_with_parent() -> None:
    """Linux: this process is killed when the process that started it exits, however that one ends (even by
    SIGKILL), so a killed `cowork-curate run` leaves no batch worker behind."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the parent's own clean-up has to do
        return
    if os.getppid() == 1:  # the parent is already gone
        os._exit(1)
