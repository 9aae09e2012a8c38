"""Locate evidence values: where the agent first uses each, and every earlier message showing it.

A columnar index join (see `candidates`) leaves few candidate messages per value; only those are
checked exactly, with boundary-aware patterns, to get character offsets in the original text.
"""

from __future__ import annotations

import polars as pl

from cowork_assets.evidence.schemas import SHOWN
from cowork_assets.evidence.values import matches, norm_text

OCCURRENCE_SCHEMA = {
    "trajectory_id": pl.String, "norm": pl.String, "message_index": pl.Int32, "role": pl.String,
    "offset": pl.Int64, "length": pl.Int64, "message_chars": pl.Int64,
}
LOCATION_SCHEMA = {
    "trajectory_id": pl.String, "norm": pl.String, "used_at": pl.Int32, "found_at": pl.Int32,
    "found_role": pl.String, "found_offset": pl.Int64, "found_length": pl.Int64, "found_message_chars": pl.Int64,
    "shown_at": pl.List(SHOWN),
}


def searchable(messages: pl.DataFrame) -> pl.DataFrame:
    """Messages with the text a value can appear in: content, plus tool-call arguments for the assistant."""
    args = pl.col("tool_calls").list.eval(pl.element().struct.field("arguments")).list.join("\n")
    return messages.select(
        "trajectory_id", "message_index", "role", "content",
        text=pl.when(pl.col("role") == "assistant")
        .then(pl.concat_str([pl.col("content").fill_null(""), args], separator="\n"))
        .otherwise(pl.col("content").fill_null("")),
    )


# Matching is on ASCII alphanumeric boundaries, so wherever a value occurs, each maximal alphanumeric
# run of the value is also a whole run ("token") of the text. Joining on the value's longest run finds
# every candidate message in time linear in the text, however many values and messages a trajectory has.
RUN = r"[0-9a-z]+"


def _anchor(norm: pl.Expr) -> pl.Expr:
    runs = norm.str.extract_all(RUN)
    return runs.list.eval(pl.element().sort_by(pl.element().str.len_chars(), descending=True)).list.first()


def candidates(keys: pl.DataFrame, messages: pl.DataFrame) -> pl.DataFrame:
    """Messages worth checking exactly, in conversation order: (trajectory_id, message_index, role, text,
    lowered, norms). `lowered` says that `text` is already lower-cased (ASCII text, lowered by polars)."""
    keys = keys.select("trajectory_id", "norm").unique().with_columns(anchor=_anchor(pl.col("norm")))
    anchors = keys["anchor"].drop_nulls().unique().to_list()
    texts = searchable(messages).with_columns(ntext=norm_text(pl.col("text")))
    # Each distinct text is split once (prompts and observations recur across a task's runs), and only
    # the runs that are some value's anchor are kept: the join below is then small.
    text_anchors = texts.select("ntext").unique().with_columns(
        anchor=pl.col("ntext").str.extract_all(RUN).list.eval(pl.element().filter(pl.element().is_in(anchors)).unique())
    )
    anchored = (
        texts.lazy().select("trajectory_id", "message_index", "ntext")
        .join(text_anchors.lazy(), on="ntext").explode("anchor")
        .join(keys.lazy().filter(pl.col("anchor").is_not_null()), on=["trajectory_id", "anchor"])
        .select("trajectory_id", "norm", "message_index").collect()
    )
    # Values with no ASCII alphanumeric run (rare): plain containment over that trajectory's messages.
    unanchored = (
        keys.filter(pl.col("anchor").is_null()).join(texts, on="trajectory_id")
        .filter(pl.col("ntext").str.contains(pl.col("norm"), literal=True))
        .select("trajectory_id", "norm", "message_index")
    )
    ascii_ = pl.col("text").str.len_bytes() == pl.col("text").str.len_chars()
    return (
        pl.concat([anchored, unanchored]).unique()
        .group_by("trajectory_id", "message_index").agg(pl.col("norm").sort().alias("norms"))
        .join(texts.select("trajectory_id", "message_index", "role", "text"), on=["trajectory_id", "message_index"])
        .select("trajectory_id", "message_index", "role",
                text=pl.when(ascii_).then(pl.col("text").str.to_lowercase()).otherwise("text"),
                lowered=ascii_, norms="norms")
        .sort("trajectory_id", "message_index")
    )


def scan(keys: pl.DataFrame, messages: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """For distinct (trajectory_id, norm) keys: (first use per key, every occurrence before that use)."""
    uses: dict[tuple[str, str], int] = {}
    occurrences = []
    # Long strings crossing into Python are the cost here: each candidate message crosses once, with the
    # values to look for in it, already lower-cased when it is ASCII (lower-casing keeps its offsets).
    for tid, index, role, text, lowered, norms in candidates(keys, messages).iter_rows():
        for norm in norms:
            key = (tid, norm)
            if key in uses:
                continue  # messages come in order: everything after the first use is irrelevant
            if role == "assistant":
                if next(matches(norm, text, text if lowered else None), None):
                    uses[key] = index
            elif text:
                occurrences += [(tid, norm, index, role, start, length, len(text))
                                for start, length in matches(norm, text, text if lowered else None)]
    used = pl.DataFrame(
        [(t, n, i) for (t, n), i in uses.items()], orient="row",
        schema={"trajectory_id": pl.String, "norm": pl.String, "used_at": pl.Int32},
    )
    occurrences = pl.DataFrame(occurrences, schema=OCCURRENCE_SCHEMA, orient="row").sort(
        "trajectory_id", "norm", "message_index", "offset")
    return used, occurrences


def locate(items: pl.DataFrame, messages: pl.DataFrame) -> pl.DataFrame:
    """One row per distinct (trajectory_id, norm) of `items`: first use, and first location before it."""
    keys = items.select("trajectory_id", "norm").unique(maintain_order=True)
    used, occurrences = scan(keys, messages)
    first = (
        occurrences.sort("message_index", "offset").group_by("trajectory_id", "norm", maintain_order=True)
        .agg(pl.all().first(), shown_at=pl.struct("message_index", "offset", "length"))
        .rename({"message_index": "found_at", "role": "found_role", "offset": "found_offset",
                 "length": "found_length", "message_chars": "found_message_chars"})
    )
    return (
        keys.join(used, on=["trajectory_id", "norm"], how="left", maintain_order="left")
        .join(first, on=["trajectory_id", "norm"], how="left", maintain_order="left")
        .with_columns(pl.col("shown_at").fill_null(pl.lit([], dtype=pl.List(SHOWN))))
        .select(list(LOCATION_SCHEMA))
    )


def shown(evidence: pl.DataFrame) -> pl.DataFrame:
    """The occurrences `scan` found, back from the evidence table: one row per match before first use."""
    return (
        evidence.select("trajectory_id", "norm", "shown_at").unique(["trajectory_id", "norm"], maintain_order=True)
        .explode("shown_at").drop_nulls("shown_at").unnest("shown_at")
    )


STATUS = (
    pl.when(pl.col("used_at").is_null()).then(pl.lit("unused"))
    .when(pl.col("found_at").is_null()).then(pl.lit("produced"))
    .when(pl.col("found_role") == "tool").then(pl.lit("at_risk"))
    .otherwise(pl.lit("given"))
)
