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
