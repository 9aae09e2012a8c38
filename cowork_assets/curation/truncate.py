"""Truncate long tool observations under a strategy, and decide which at-risk evidence survives.

`head` is columnar. `evidence_aware` starts from the head cut and recomputes only the observations
that hold at-risk evidence, in Python (interval arithmetic per observation, see spans.py).
"""

from __future__ import annotations

import polars as pl

from cowork_assets.curation.spans import MARKER, MARKER_RE, evidence_spans, render

SPAN = pl.Struct({"start": pl.Int64, "end": pl.Int64})
CUT_SCHEMA = {
    "trajectory_id": pl.String, "message_index": pl.Int32, "kept_spans": pl.List(SPAN),
    "overflow_chars": pl.Int64, "new_content": pl.String,
}
STRATEGIES = ("head", "evidence_aware")


def cores(at_risk: pl.DataFrame) -> pl.DataFrame:
    """Evidence spans per observation: where each at-risk value was first seen."""
    return at_risk.group_by("trajectory_id", pl.col("found_at").alias("message_index")).agg(
        start=pl.col("found_offset"), end=pl.col("found_offset") + pl.col("found_length"))


def cut(messages: pl.DataFrame, at_risk: pl.DataFrame, strategy: str, allowance: int, context: int) -> pl.DataFrame:
    """One row per truncated observation: kept spans, overflow beyond the allowance, and new text."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown truncation strategy {strategy!r}; use one of {STRATEGIES}")
    # Markers do not count against the allowance, so curating curated text changes nothing.
    shown = pl.col("content").str.replace_all(MARKER_RE.pattern, "").str.len_chars()
    long = messages.filter(pl.col("role") == "tool", shown > allowance).select(
        "trajectory_id", "message_index", "content", length=pl.col("content").str.len_chars())
    before, after = MARKER.split("{n}")
    head = long.with_columns(
        kept_spans=pl.concat_list(pl.struct(start=pl.lit(0, pl.Int64), end=pl.lit(allowance, pl.Int64))),
        overflow_chars=pl.lit(0, pl.Int64),
        new_content=pl.concat_str([pl.col("content").str.slice(0, allowance), pl.lit(before),
                                   (pl.col("length") - allowance).cast(pl.String), pl.lit(after)]),
    ).select(list(CUT_SCHEMA))
    if strategy == "head":
        return head
    rows = []
    for tid, index, content, length, starts, ends in long.join(
        cores(at_risk), on=["trajectory_id", "message_index"]
    ).select("trajectory_id", "message_index", "content", "length", "start", "end").iter_rows():
        spans, overflow = evidence_spans(length, allowance, list(zip(starts, ends)), context)
        rows.append((tid, index, [{"start": s, "end": e} for s, e in spans], overflow, render(content, spans)))
    windowed = pl.DataFrame(rows, schema=CUT_SCHEMA, orient="row")
    return pl.concat([head.join(windowed, on=["trajectory_id", "message_index"], how="anti", maintain_order="left"),
                      windowed]).sort("trajectory_id", "message_index")


def survival(occurrences: pl.DataFrame, cuts: pl.DataFrame) -> pl.DataFrame:
    """Per (trajectory_id, norm): does any occurrence before first use lie wholly in kept text?"""
    key = ["trajectory_id", "message_index"]
    spans = cuts.select(*key, "kept_spans").explode("kept_spans").unnest("kept_spans")
    inside = (pl.col("start") <= pl.col("offset")) & (pl.col("offset") + pl.col("length") <= pl.col("end"))
    return (
        occurrences.join(cuts.select(*key, cut=pl.lit(True)), on=key, how="left")
        .join(spans, on=key, how="left")
        .group_by("trajectory_id", "norm")
        .agg(survives=(pl.col("cut").is_null() | inside.fill_null(False)).any())
    )
