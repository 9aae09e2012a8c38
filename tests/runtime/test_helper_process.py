"""The helper processes the tokenizer and the quality suites run in."""

import time

import orjson

from cowork_assets.runtime.helper_process import HelperProcess
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
