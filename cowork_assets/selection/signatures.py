"""Per-trajectory dedup signatures, computed per batch so clustering never needs the raw text.

* content_hash: sha256 of the normalised conversation (roles, case-folded whitespace-collapsed text,
  tool names and arguments) — equal hashes are exact duplicates;
* shingles: hashes of word 3-grams over the assistant's text and actions (tool calls), the set
  whose Jaccard similarity defines near-duplicates;
* minhash: PERMUTATIONS minimum hashes of those shingles, for LSH candidate generation.
Hashing uses polars' seeded hash (stable for the pinned polars) and fixed permutation constants,
so signatures are identical across runs and machines.
"""

from __future__ import annotations

import hashlib
import random

import polars as pl

SHINGLE_WORDS = 3
PERMUTATIONS = 64  # the minimums are most of the signatures' cost; the recall at 64: dedup.py
PRIME = (1 << 61) - 1
_rng = random.Random(20261129)
A = [_rng.randrange(1, 1 << 31) for _ in range(PERMUTATIONS)]
B = [_rng.randrange(0, 1 << 31) for _ in range(PERMUTATIONS)]
SEED = 7


# Collapses every whitespace run to one space, as r"\s+" -> " " does, but matches only the runs that change (a
# run that is not a lone space): nearly every word boundary is a lone space, and matching each took twice as long.
WHITESPACE_RUNS = r"[^\S ]\s*|\s\s+"


def _normal(expr: pl.Expr) -> pl.Expr:
    return expr.fill_null("").str.to_lowercase().str.replace_all(WHITESPACE_RUNS, " ").str.strip_chars()


def signatures(messages: pl.DataFrame) -> pl.DataFrame:
    """trajectory_id, content_hash, shingles (list[u32]), minhash (list[u64]) for each trajectory."""
    calls = (
        pl.col("tool_calls")
        .list.eval(pl.element().struct.field("name") + " " + pl.element().struct.field("arguments"))
        .list.join(" ")
    )
    content, actions = pl.col("content_n"), pl.col("calls_n")  # normalised once, used twice
    m = (
        messages.sort("trajectory_id", "message_index")
        .with_columns(content_n=_normal(pl.col("content")), calls_n=_normal(calls))
        .with_columns(
            line=pl.concat_str([pl.col("role"), content, actions], separator="\x1f"),
            action_text=pl.when(pl.col("role") == "assistant")
            .then(pl.concat_str([content, actions], separator=" "))
            .otherwise(None),
        )
    )
    per = m.group_by("trajectory_id", maintain_order=True).agg(
        conversation=pl.col("line").str.join("\x1e"),
        words=pl.col("action_text").drop_nulls().str.join(" ").str.extract_all(r"[\w@#./:-]+").first(),
    )
    w = pl.element()
    grams = (
        per.select(
            "trajectory_id",
            shingle=pl.col("words").list.eval(
                pl.concat_str([w, *[w.shift(-i) for i in range(1, SHINGLE_WORDS)]], separator=" ").drop_nulls()
            ),
        )
        .explode("shingle")
        .drop_nulls("shingle")
        .with_columns(h=(pl.col("shingle").hash(SEED) & 0xFFFFFFFF).cast(pl.UInt64))
        .unique(["trajectory_id", "h"])
    )
    mins = grams.group_by("trajectory_id").agg(
        shingles=pl.col("h").sort().cast(pl.UInt32),
        # an array first: concat_list of the aggregates is slower
        minhash=pl.concat_arr([((pl.col("h") * a + b) % PRIME).min() for a, b in zip(A, B)]).arr.to_list(),
    )
    digests = [hashlib.sha256(c.encode()).hexdigest()[:32] for c in per["conversation"]]
    return (
        per.select("trajectory_id", content_hash=pl.Series(digests, dtype=pl.String))
        .join(mins, on="trajectory_id", how="left", maintain_order="left")
        .with_columns(
            shingles=pl.col("shingles").fill_null(pl.lit([], dtype=pl.List(pl.UInt32))),
            minhash=pl.col("minhash").fill_null(pl.lit([PRIME] * PERMUTATIONS, dtype=pl.List(pl.UInt64))),
        )
    )
