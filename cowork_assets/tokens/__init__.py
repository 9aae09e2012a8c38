"""Offline tiktoken: the BPE rank files ship inside this package.

tiktoken normally downloads its rank files on first use, which fails on machines without internet.
We point tiktoken's cache at the bundled files (named, as tiktoken expects, by the sha1 of their
download URL) and verify each file's sha256 ourselves first, so a damaged install fails with a clear
message instead of an attempted download.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from functools import cache
from pathlib import Path

import orjson
import polars as pl
import tiktoken

from cowork_assets.runtime import scratch
from cowork_assets.runtime.helper_process import HelperProcess
from cowork_assets.store.text_key import KEY, TextMemo, keyed

CACHE_DIR = Path(__file__).parent / "tiktoken_cache"

# encoding -> (sha1 of tiktoken's download URL = cache file name, sha256 tiktoken expects)
BUNDLED = {
    "o200k_base": (
        "fb374d419588a4632f3f557e76b4b70aebbca790",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}


# Each encoding's special tokens, known without loading its 3.6 MB rank file (tests check they match).
SPECIAL_TOKENS = {
    "o200k_base": frozenset({"<|endoftext|>", "<|endofprompt|>"}),
    "cl100k_base": frozenset(
        {"<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>"}
    ),
}


class TokenizerUnavailable(RuntimeError):
    pass


@cache
def get_encoding(name: str) -> tiktoken.Encoding:
    """Load a bundled tiktoken encoding without touching the network."""
    if name not in BUNDLED:
        raise TokenizerUnavailable(f"token encoding {name!r} is not bundled; choose one of {sorted(BUNDLED)}")
    file_name, sha256 = BUNDLED[name]
    path = CACHE_DIR / file_name
    if not path.is_file():
        raise TokenizerUnavailable(f"bundled rank file for {name} is missing: {path}")
    if hashlib.sha256(path.read_bytes()).hexdigest() != sha256:
        raise TokenizerUnavailable(f"bundled rank file for {name} fails its sha256 check: {path}")
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(CACHE_DIR)
    try:
        return tiktoken.get_encoding(name)
    finally:
        if previous is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


# Below this many distinct texts, this process counts them alone: a helper's share would not repay sending it.
HELPER_MIN_TEXTS = 20_000


class TokenCounter:
    """Counts tokens here and in `workers` - 1 helper processes (`python -m cowork_assets.tokens`).

    The helpers start at once and load the encoding (the rank file, the interpreter) while the caller
    prepares its texts, so that each process then gets an equal share. Each distinct text is encoded
    once (system prompts, requests and tool observations recur across the runs of a task), in a plain
    loop: for many short texts that is several times as fast as tiktoken's batch API, which pays for a
    future per text. Processes, not threads: tiktoken holds the GIL. A context manager.

    With `remember`, the counter keeps each count it made, by the text's key (`text_key.py`), for later calls:
    a corpus counted a batch at a time repeats about half its text from batch to batch.

    With `ahead`, all `workers` processes are helpers and the counter remembers: `count_later` hands texts
    to the helpers and returns at once, and the caller prepares its next texts while they count. With `ahead`
    and no workers, `count_later` counts in this process before it returns (texts too few to repay a helper).
    """

    def __init__(self, encoding: str, workers: int = 2, remember: bool = False, ahead: bool = False):
        self.encoding = encoding
        self._stack = ExitStack()
        self._helpers = [_Helper(self._stack, encoding) for _ in range(workers if ahead else workers - 1)]
        self._memo = TextMemo({"tokens": pl.Int64})
        self._remember, self._ahead = remember or ahead, ahead
        self._sent: deque[tuple[int, list[tuple[_Helper, pl.DataFrame]]]] = deque()  # (ticket, shares) in flight
        self._tickets = 0

    def count(self, texts: Sequence[str]) -> list[int]:
        """Token count of each text (special-token strings are counted as plain text)."""
        if not self._remember:
            return self._count(texts)
        self._receive(self._tickets)  # the helpers answer in order: what was sent ahead first
        texts = keyed(texts)
        new = self._memo.unknown(texts)
        self._learn(new, self._count(new["text"].to_list()))
        return self._look_up(texts)

    def count_later(self, texts: Sequence[str]) -> Callable[[], list[int]]:
        """Send `texts` to the helpers and return at once a function that gives their counts, waiting for
        them if need be. A text counted or sent before is not sent again. Needs a counter made with `ahead`."""
        if not self._ahead:
            raise ValueError("count_later needs a TokenCounter made with ahead=True")
        if not self._helpers:
            counted = self.count(texts)
            return lambda: counted
        texts = keyed(texts)
        new = self._memo.unknown(texts)
        if self._sent:
            in_flight = pl.concat([share for _, shares in self._sent for _, share in shares])
            new = new.join(in_flight, on=KEY, how="anti")
        self._tickets += 1
        if new.height:
            shares = [(h, new.gather_every(len(self._helpers), offset=i)) for i, h in enumerate(self._helpers)]
            for helper, share in shares:
                helper.send_share(share["text"].to_list())
            self._sent.append((self._tickets, [(h, share.select(KEY)) for h, share in shares]))
        ticket = self._tickets

        def counts() -> list[int]:
            self._receive(ticket)
            return self._look_up(texts)

        return counts

    def _receive(self, ticket: int) -> None:
        """Learn the helpers' counts of everything sent up to `ticket`."""
        while self._sent and self._sent[0][0] <= ticket:
            for helper, keys in self._sent.popleft()[1]:
                self._learn(keys, helper.counts())

    def _learn(self, keys: pl.DataFrame, counts: list[int]) -> None:
        self._memo.learn(keys, pl.DataFrame({"tokens": counts}, schema={"tokens": pl.Int64}))

    def _look_up(self, texts: pl.DataFrame) -> list[int]:
        return self._memo.look_up(texts)["tokens"].to_list()

    def _count(self, texts: Sequence[str]) -> list[int]:
        distinct = list(dict.fromkeys(texts))
        encode = get_encoding(self.encoding).encode_ordinary
        if len(distinct) < HELPER_MIN_TEXTS or not self._helpers:
            by_text = {text: len(encode(text)) for text in distinct}
        else:
            shares = [distinct[i :: len(self._helpers) + 1] for i in range(len(self._helpers) + 1)]
            for helper, share in zip(self._helpers, shares[1:]):
                helper.send_share(share)
            by_text = {text: len(encode(text)) for text in shares[0]}
            for helper, share in zip(self._helpers, shares[1:]):
                by_text.update(zip(share, helper.counts()))
        return [by_text[text] for text in texts]

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> TokenCounter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def count_tokens(texts: Sequence[str], encoding: str, workers: int = 2) -> list[int]:
    """Token count of each text, with a `TokenCounter` of its own."""
    with TokenCounter(encoding, workers if len(texts) >= HELPER_MIN_TEXTS else 1) as counter:
        return counter.count(texts)


class _Helper(HelperProcess):
    """One tokenizer process. A share goes over in a temporary file, removed once it is answered: writing it
    to the process's stdin would need this process's GIL between writes while it encodes its own share."""

    def __init__(self, stack: ExitStack, encoding: str):
        super().__init__("cowork_assets.tokens", encoding)
        stack.callback(self.close)
        self._files: deque = deque()  # the shares sent and not yet answered, in order

    def send_share(self, share: list[str]) -> None:
        file = tempfile.NamedTemporaryFile(suffix=".json", dir=scratch.folder())
        file.write(orjson.dumps(share))
        file.flush()
        self._files.append(file)
        self.send(file.name.encode())

    def counts(self) -> list[int]:
        reply = self.receive()
        if reply is None:
            raise TokenizerUnavailable(f"a tokenizer process failed {self.failure()}")
        self._files.popleft().close()
        return orjson.loads(reply)

    def close(self) -> None:
        super().close()
        while self._files:
            self._files.popleft().close()


def token_text(content: pl.Expr, tool_calls: pl.Expr, reasoning: pl.Expr) -> pl.Expr:
    """The text of a message that is counted: its reasoning, its content, then each call's name and arguments."""
    calls = tool_calls.list.eval(pl.element().struct.field("name") + " " + pl.element().struct.field("arguments"))
    text = pl.concat_str([content.fill_null(""), calls.list.join("\n").fill_null("")], separator="\n")
    return pl.when(reasoning.is_null()).then(text).otherwise(pl.concat_str([reasoning, text], separator="\n"))
