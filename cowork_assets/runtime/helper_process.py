"""A helper Python process spoken to one line at a time: a request line on its stdin, a reply line on
its stdout. The tokenizer and the Great Expectations suites run in such processes."""

from __future__ import annotations

import select
import subprocess
import sys
import tempfile
from contextlib import suppress
from typing import BinaryIO


def write_line(stream: BinaryIO, line: bytes) -> None:
    """Write `line` and a newline, all of it. A write to a full pipe that a signal interrupts (the run suspended
    with Ctrl-Z and resumed, a profiler attaching) returns having written part: the rest is written after, or the
    reader waits forever for the end of the line."""
    view = memoryview(line + b"\n")
    while view:
        view = view[stream.write(view) :]
    stream.flush()


class HelperProcess:
    """`python -m MODULE ARGS...`, started at once. Its stderr goes to a file, not a pipe (a chatty library
    cannot block it), for the reason it gives if it exits. It holds nothing to save: `close` kills it
    (tearing down an interpreter that has loaded much took up to a second)."""

    def __init__(self, module: str, *args: str):
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [sys.executable, "-m", module, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr
        )

    @property
    def pid(self) -> int:
        return self._process.pid

    def send(self, request: bytes) -> None:
        """Send one request line (a process that has exited is reported by `receive`)."""
        try:
            write_line(self._process.stdin, request)
        except OSError:
            pass

    def readable(self, timeout: float | None) -> bool:
        """Whether a reply line (or the end of its output) is there to read, waiting up to `timeout` seconds (None:
        until it is). Only before anything is read ahead: `receive` reads whole lines."""
        return bool(select.select([self._process.stdout], [], [], timeout)[0])

    def receive(self) -> bytes | None:
        """The next reply line, or None if the process has exited (see `failure`)."""
        return self._process.stdout.readline() or None

    def failure(self) -> str:
        """How the process ended: `(exit CODE): the last line it wrote to stderr`."""
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return f"(exit {self._process.wait()}): {lines[-1] if lines else 'no message'}"

    def running(self) -> bool:
        return self._process.poll() is None

    def close(self) -> None:
        self._process.kill()
        self._process.wait()
        for stream in (self._process.stdin, self._process.stdout, self._stderr):
            with suppress(OSError):  # a request left half-written in the pipe
                stream.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
