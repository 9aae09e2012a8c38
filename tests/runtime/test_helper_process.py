"""The helper processes the tokenizer and the quality suites run in."""

import io
import os
import signal
import threading
import time
from pathlib import Path

import orjson
import pytest

from cowork_assets.runtime.helper_process import HelperProcess, write_line
from cowork_assets.tokens import get_encoding


def test_a_helper_answers_one_line_per_request_and_is_stopped_on_leaving(tmp_path):
    texts = tmp_path / "texts.json"
    texts.write_bytes(orjson.dumps(["hello world", "", "ünïcödé <|endoftext|>"]))
    expected = [len(get_encoding("o200k_base").encode_ordinary(t)) for t in orjson.loads(texts.read_bytes())]
    with HelperProcess("cowork_assets.tokens", "o200k_base") as helper:
        for _ in range(2):  # the same process answers again
            helper.send(str(texts).encode())
            assert orjson.loads(helper.receive()) == expected
        assert helper.running()
    assert not helper.running()


def test_a_helper_that_has_exited_is_reported_with_its_exit_and_last_error_line_and_closes_cleanly():
    helper = HelperProcess("no_such_module_here")
    while helper.running():  # python exits at once: no module of that name
        time.sleep(0.01)
    helper.send(b"x" * 100_000)  # into a pipe nobody reads: no exception here
    assert helper.receive() is None
    failure = helper.failure()
    assert failure.startswith("(exit 1): ") and failure.endswith("No module named no_such_module_here")
    helper.close()  # the unsent request left in the pipe's buffer does not raise either


def _blocked_writing(pid: int, timeout: float = 30.0) -> bool:
    """Whether the process comes to wait in a write to a full pipe within `timeout` seconds."""
    wchan = Path(f"/proc/{pid}/wchan")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if wchan.read_text().endswith("pipe_write"):  # anon_pipe_write on newer kernels
            return True
        time.sleep(0.01)
    return False


@pytest.mark.skipif(not Path("/proc/self/wchan").exists(), reason="needs Linux's /proc")
def test_a_reply_interrupted_by_a_suspend_and_resume_arrives_whole(tmp_path):
    """Ctrl-Z and `fg` stop and continue the helpers too: a helper writing a reply larger than the pipe holds is
    interrupted, its write returns part-done, and it must write the rest (the run hung in sft_candidate)."""
    texts = [f"text {i}" for i in range(40_000)]  # a reply of ~80 KB: more than a pipe holds
    share = tmp_path / "share.json"
    share.write_bytes(orjson.dumps(texts))
    expected = [len(get_encoding("o200k_base").encode_ordinary(t)) for t in texts]
    replies = []
    with HelperProcess("cowork_assets.tokens", "o200k_base") as helper:
        helper.send(str(share).encode())
        assert _blocked_writing(helper.pid)  # nobody reads yet: the pipe is full
        os.kill(helper.pid, signal.SIGSTOP)
        os.kill(helper.pid, signal.SIGCONT)
        reader = threading.Thread(target=lambda: replies.append(helper.receive()), daemon=True)
        reader.start()
        reader.join(timeout=30)
        assert not reader.is_alive(), "the reply never ended"
    assert orjson.loads(replies[0]) == expected


def test_write_line_writes_what_a_short_write_left():
    class ShortWrites(io.RawIOBase):  # writes at most 1,000 bytes a call, as an interrupted pipe write does
        def __init__(self):
            self.data = bytearray()

        def writable(self):
            return True

        def write(self, b):
            self.data += bytes(b[:1000])
            return min(len(b), 1000)

    stream = ShortWrites()
    write_line(stream, b"x" * 2500)
    assert bytes(stream.data) == b"x" * 2500 + b"\n"
