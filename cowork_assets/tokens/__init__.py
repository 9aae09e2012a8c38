"""Offline tiktoken: the BPE rank files ship inside this package.

tiktoken normally downloads its rank files on first use, which fails on machines without internet.
We point tiktoken's cache at the bundled files (named, as tiktoken expects, by the sha1 of their
download URL) and verify each file's sha256 ourselves first, so a damaged install fails with a clear
message instead of an attempted download.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from functools import lru_cache
from pathlib import Path

import orjson
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


# Below this many distinct texts, one process counts them sooner than a second one starts (~0.35 s).
HELPER_MIN_TEXTS = 20_000


def count_tokens(texts: Sequence[str], encoding: str, workers: int = 2) -> list[int]:
    """Token count of each text (special-token strings are counted as plain text).

    Each distinct text is encoded once (system prompts, requests and tool observations recur across
    the runs of a task), in a plain loop: for many short texts that is several times as fast as
    tiktoken's batch API, which pays for a future per text. With `workers` > 1 and many texts, the
    distinct texts are dealt out: this process encodes a share while `workers` - 1 helper processes
    (`python -m cowork_assets.tokens`) encode the others. Not threads: tiktoken holds the GIL, so
    threads of one process take turns instead of encoding in parallel.
    """
    distinct = list(dict.fromkeys(texts))
    encode = get_encoding(encoding).encode_ordinary
    if workers <= 1 or len(distinct) < HELPER_MIN_TEXTS:
        by_text = {text: len(encode(text)) for text in distinct}
    else:
        # Dealt 3 to this process for every 2 to a helper, which first spends ~0.35 s starting.
        shares: list[list[str]] = [[] for _ in range(workers)]
        for text, owner in zip(distinct, itertools.cycle([0, 0, 0, *(w for w in range(1, workers) for _ in "ab")])):
            shares[owner].append(text)
        with ExitStack() as stack:
            helpers = [_start_helper(stack, share, encoding) for share in shares[1:]]
            by_text = {text: len(encode(text)) for text in shares[0]}
            for share, helper in zip(shares[1:], helpers):
                out, error = helper.communicate()
                if helper.returncode:
                    raise TokenizerUnavailable(f"a tokenizer process failed (exit {helper.returncode}): "
                                               f"{error.decode(errors='replace').strip()[-500:]}")
                by_text.update(zip(share, orjson.loads(out)))
    return [by_text[text] for text in texts]


def _start_helper(stack: ExitStack, share: list[str], encoding: str) -> subprocess.Popen:
    """A tokenizer process counting `share`, handed over in a temporary file: writing to its stdin would
    need this process's GIL between writes while it encodes its own share."""
    texts = stack.enter_context(tempfile.NamedTemporaryFile(suffix=".json"))
    texts.write(orjson.dumps(share))
    texts.flush()
    helper = stack.enter_context(subprocess.Popen([sys.executable, "-m", "cowork_assets.tokens", encoding, texts.name],
                                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    stack.callback(helper.kill)  # before the exit waits for it: a no-op once it has finished
    return helper


def token_text(content: pl.Expr, tool_calls: pl.Expr) -> pl.Expr:
    """The text of a message that is counted: its content, then each call's name and arguments."""
    calls = tool_calls.list.eval(pl.element().struct.field("name") + " " + pl.element().struct.field("arguments"))
    return pl.concat_str([content.fill_null(""), calls.list.join("\n").fill_null("")], separator="\n")
