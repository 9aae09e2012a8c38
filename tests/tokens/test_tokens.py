"""Token counts work with no network, from the rank files shipped in the package."""

import shutil
import socket
import sys

import pytest

import cowork_assets.tokens as tokens


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*a, **k):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """No in-process cache and an empty user tiktoken cache: only the bundled files can help."""
    tokens.get_encoding.cache_clear()
    import tiktoken.registry

    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-user-cache"))
    yield
    tokens.get_encoding.cache_clear()


@pytest.mark.parametrize("name, text, expected", [("o200k_base", "hello world", 2), ("cl100k_base", "hello world", 2)])
def test_bundled_encodings_load_offline(no_network, fresh, name, text, expected):
    assert tokens.count_tokens([text, ""], name) == [expected, 0]
    import os

    assert os.environ["TIKTOKEN_CACHE_DIR"].endswith("empty-user-cache")  # the user's setting is restored


def test_special_token_text_is_counted_not_rejected(fresh):
    assert tokens.count_tokens(["<|endoftext|>"], "o200k_base")[0] > 1


def test_unknown_encoding_is_a_clear_error(fresh):
    with pytest.raises(tokens.TokenizerUnavailable, match="not bundled"):
        tokens.get_encoding("p50k_base")


def test_a_damaged_rank_file_is_detected(fresh, monkeypatch, tmp_path):
    damaged = tmp_path / "cache"
    shutil.copytree(tokens.CACHE_DIR, damaged)
    name = tokens.BUNDLED["o200k_base"][0]
    (damaged / name).write_bytes((damaged / name).read_bytes()[:-10])
    monkeypatch.setattr(tokens, "CACHE_DIR", damaged)
    with pytest.raises(tokens.TokenizerUnavailable, match="sha256"):
        tokens.get_encoding("o200k_base")


def test_special_tokens_known_without_loading_match_the_encodings():
    from cowork_assets.tokens import BUNDLED, SPECIAL_TOKENS, get_encoding

    assert set(SPECIAL_TOKENS) == set(BUNDLED)
    for name, special in SPECIAL_TOKENS.items():
        assert special == get_encoding(name).special_tokens_set


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_counts_match_encoding_each_text_with_repeats_in_any_order(workers):
    enc = tokens.get_encoding("o200k_base")
    texts = [f"observation {i % 7}: " + "row " * (i % 5) for i in range(40)] + ["", "hello world", ""]
    assert tokens.count_tokens(texts, "o200k_base", workers) == [len(enc.encode_ordinary(t)) for t in texts]


@pytest.mark.parametrize("workers", [2, 3])
def test_helper_processes_count_their_shares(monkeypatch, workers):
    monkeypatch.setattr(tokens, "HELPER_MIN_TEXTS", 0)  # helpers even for a few texts
    enc = tokens.get_encoding("o200k_base")
    texts = [f"call {i % 11}: " + "é row " * (i % 13) for i in range(200)] + ["", "<|endoftext|>"]
    assert tokens.count_tokens(texts, "o200k_base", workers) == [len(enc.encode_ordinary(t)) for t in texts]


def test_a_failed_helper_process_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(tokens, "HELPER_MIN_TEXTS", 0)
    monkeypatch.setattr(sys, "executable", shutil.which("false"))
    with pytest.raises(tokens.TokenizerUnavailable, match="a tokenizer process failed"):
        tokens.count_tokens(["a", "b", "c"], "o200k_base", 2)


def test_a_counter_started_ahead_answers_each_request_with_the_same_helpers(monkeypatch):
    monkeypatch.setattr(tokens, "HELPER_MIN_TEXTS", 0)
    enc = tokens.get_encoding("o200k_base")
    first = [f"row {i}" * (i % 9) for i in range(100)]
    second = ["a b c", "ünï côdé", *first[:10]]
    with tokens.TokenCounter("o200k_base", 3) as counter:
        helpers = [h.pid for h in counter._helpers]
        assert counter.count(first) == [len(enc.encode_ordinary(t)) for t in first]
        assert counter.count(second) == [len(enc.encode_ordinary(t)) for t in second]
        assert [h.pid for h in counter._helpers] == helpers and all(h.running() for h in counter._helpers)
    assert not any(h.running() for h in counter._helpers)  # stopped on leaving


@pytest.mark.parametrize("workers", [1, 2])
def test_a_remembering_counter_encodes_each_text_once_across_calls(monkeypatch, workers):
    monkeypatch.setattr(tokens, "HELPER_MIN_TEXTS", 0)
    enc = tokens.get_encoding("o200k_base")
    original, encoded = enc.encode_ordinary, []
    monkeypatch.setattr(enc, "encode_ordinary", lambda text: encoded.append(text) or original(text))
    first = [f"row {i % 5} " * (i % 7) for i in range(60)] + ["", "ünï côdé"]
    second = ["a b c", *first[10:20], "", "ünï côdé", "a b c"]
    with tokens.TokenCounter("o200k_base", workers, remember=True) as counter:
        assert counter.count(first) == [len(original(t)) for t in first]
        seen = len(encoded)
        assert counter.count(second) == [len(original(t)) for t in second]
    assert encoded[seen:] == ["a b c"]  # of the second call's texts only the new one is encoded (here)


def test_counting_ahead_sends_each_distinct_text_once_and_answers_in_any_order(monkeypatch):
    enc = tokens.get_encoding("o200k_base")
    sent = []
    original_send = tokens._Helper.send_share
    monkeypatch.setattr(
        tokens._Helper, "send_share", lambda self, share: sent.append(share) or original_send(self, share)
    )
    first = [f"row {i % 5} " * (i % 7) for i in range(40)] + ["", "ünï côdé"]
    second = ["a b c", *first[5:15], "ünï côdé"]  # shares texts with the first, still in flight when sent
    third = ["a b c", "x y"]
    with tokens.TokenCounter("o200k_base", 2, ahead=True) as counter:
        later = [counter.count_later(texts) for texts in (first, second, third)]
        assert later[2]() == [len(enc.encode_ordinary(t)) for t in third]  # waits for the earlier ones too
        assert later[0]() == [len(enc.encode_ordinary(t)) for t in first]
        assert later[1]() == [len(enc.encode_ordinary(t)) for t in second]
        assert counter.count_later(first)() == [len(enc.encode_ordinary(t)) for t in first]  # nothing sent
        helpers = counter._helpers
        assert len(helpers) == 2 and not any(h._files for h in helpers)  # every share answered and removed
    texts = [t for share in sent for t in share]
    assert sorted(texts) == sorted({*first, *second, *third})  # each distinct text sent once, to one helper
    assert len(sent) == 6  # three calls with something new, a share per helper each


def test_a_count_after_counting_ahead_takes_the_answers_in_order(monkeypatch):
    monkeypatch.setattr(tokens, "HELPER_MIN_TEXTS", 0)
    enc = tokens.get_encoding("o200k_base")
    ahead, now = [f"ahead {i}" for i in range(30)], [f"now {i}" * i for i in range(30)]
    with tokens.TokenCounter("o200k_base", 1, ahead=True) as counter:
        later = counter.count_later(ahead)
        assert counter.count(now) == [len(enc.encode_ordinary(t)) for t in now]
        assert later() == [len(enc.encode_ordinary(t)) for t in ahead]


def test_counting_ahead_without_workers_counts_here_and_starts_no_helper():
    enc = tokens.get_encoding("o200k_base")
    texts = ["a b c", "ünï côdé", "", "a b c"]
    with tokens.TokenCounter("o200k_base", 0, ahead=True) as counter:
        later = counter.count_later(texts)
        assert counter._helpers == [] and later() == [len(enc.encode_ordinary(t)) for t in texts]
        assert counter.count_later(texts[:2])() == later()[:2]


def test_counting_ahead_needs_a_counter_made_for_it():
    with tokens.TokenCounter("o200k_base", 1, remember=True) as counter, pytest.raises(ValueError, match="ahead"):
        counter.count_later(["a"])
