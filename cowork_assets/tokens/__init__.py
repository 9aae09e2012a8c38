"""Offline tiktoken: the BPE rank files ship inside this package.

tiktoken normally downloads its rank files on first use, which fails on machines without internet.
We point tiktoken's cache at the bundled files (named, as tiktoken expects, by the sha1 of their
download URL) and verify each file's sha256 ourselves first, so a damaged install fails with a clear
message instead of an attempted download.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import polars as pl
import tiktoken

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
    "cl100k_base": frozenset({"<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>"}),
}


class TokenizerUnavailable(RuntimeError):
    pass


@lru_cache(maxsize=None)
def get_encoding(name: str) -> tiktoken.Encoding:
    """Load a bundled tiktoken encoding without touching the network."""
    if name not in BUNDLED:
        raise TokenizerUnavailable(
            f"token encoding {name!r} is not bundled; choose one of {sorted(BUNDLED)}"
        )
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


def count_tokens(texts: Sequence[str], encoding: str, num_threads: int = 2) -> list[int]:
    """Token count of each text (special-token strings are counted as plain text).

    Each distinct text is encoded once (system prompts, requests and tool observations recur across
    the runs of a task). Each thread encodes an interleaved share in a plain loop: for many short
    texts that is several times as fast as tiktoken's batch API, which pays for a future per text.
    (tiktoken holds the GIL, so on this Python more threads do not encode faster; they do on a
    free-threaded build.)
    """
    enc = get_encoding(encoding)
    distinct = list(dict.fromkeys(texts))

    def count(share: list[str]) -> list[int]:
        return [len(enc.encode_ordinary(text)) for text in share]

    if num_threads <= 1 or len(distinct) < 2 * num_threads:
        counts = count(distinct)
    else:
        with ThreadPoolExecutor(num_threads) as pool:
            shares = list(pool.map(count, [distinct[i::num_threads] for i in range(num_threads)]))
        counts = [0] * len(distinct)
        for i, share in enumerate(shares):
            counts[i::num_threads] = share
    by_text = dict(zip(distinct, counts))
    return [by_text[text] for text in texts]


def token_text(content: pl.Expr, tool_calls: pl.Expr) -> pl.Expr:
    """The text of a message that is counted: its content, then each call's name and arguments."""
    calls = tool_calls.list.eval(pl.element().struct.field("name") + " " + pl.element().struct.field("arguments"))
    return pl.concat_str([content.fill_null(""), calls.list.join("\n").fill_null("")], separator="\n")
