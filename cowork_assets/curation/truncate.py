"""Cut long tool observations under a strategy, render the cut text, and decide which at-risk evidence
survives. The same for every strategy (truncation/strategies/): a strategy only chooses the kept spans.
"""

from __future__ import annotations

import polars as pl

from cowork_assets.truncation.spans import MARKER, MARKER_RE, SPAN
from cowork_assets.truncation.strategies import strategy

KEY = ["trajectory_id", "message_index"]
VALUE = ["trajectory_id", "norm"]  # an evidence value of a trajectory
CUT_SCHEMA = {
    "trajectory_id": pl.String,
    "message_index": pl.Int32,
    "kept_spans": pl.List(SPAN),
    "overflow_chars": pl.Int64,
    "saved_chars": pl.Int64,
    "new_content": pl.String,
}
_BEFORE, _AFTER = MARKER.split("{n}")


def cores(at_risk: pl.DataFrame) -> pl.DataFrame:
    """Evidence spans per observation: where each at-risk value was first seen."""
    return at_risk.group_by("trajectory_id", pl.col("found_at").alias("message_index")).agg(
        start=pl.col("found_offset"), end=pl.col("found_offset") + pl.col("found_length")
    )


def observations(messages: pl.DataFrame | pl.LazyFrame, at_risk: pl.DataFrame, content: bool = True) -> pl.DataFrame:
    """Every tool observation with its length, `shown` (its length without cut markers: markers do not count
    against the allowance, so curating curated text changes nothing) and evidence spans (`cores`).
    `messages` may be a scan: without `content`, only the positions are kept of its texts, streaming."""
    evidence = at_risk.group_by("trajectory_id", pl.col("found_at").alias("message_index")).agg(
        cores=pl.struct(start=pl.col("found_offset"), end=pl.col("found_offset") + pl.col("found_length"))
    )
    return (
        messages.lazy()
        .filter(pl.col("role") == "tool")
        .select(
            *KEY,
            *(["content"] if content else []),
            length=pl.col("content").str.len_chars().fill_null(0).cast(pl.Int64),
            shown=pl.col("content").str.replace_all(MARKER_RE.pattern, "").str.len_chars().fill_null(0),
        )
        .collect(engine="streaming")
        .join(evidence, on=KEY, how="left", maintain_order="left")
    )


def long_observations(messages: pl.DataFrame, at_risk: pl.DataFrame, allowance: int) -> pl.DataFrame:
    """The tool observations longer than the allowance (see `observations`)."""
    return observations(messages, at_risk).filter(pl.col("shown") > allowance)


def kept_spans(long: pl.DataFrame, name: str, allowance: int | pl.Expr, context: int) -> pl.DataFrame:
    """`long` with the kept spans and overflow of strategy `name`, in (trajectory, message) order."""
    return strategy(name).kept(long, allowance, context).sort(KEY)


def _pieces(cut: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """Each kept span of each cut observation (`row`), with the gap cut before it."""
    return (
        cut.select(pl.int_range(pl.len()).alias("row"), *columns, "length", "kept_spans")
        .explode("kept_spans")
        .unnest("kept_spans")
        # Rows stay in order: the previous piece is the row's own when the row repeats (`.over` is far slower).
        .with_columns(
            gap=pl.col("start")
            - pl.when(pl.col("row") == pl.col("row").shift(1)).then(pl.col("end").shift(1)).otherwise(0)
        )
    )


def _marker(n: pl.Expr) -> pl.Expr:
    return (
        pl.when(n > 0).then(pl.concat_str([pl.lit(_BEFORE), n.cast(pl.String), pl.lit(_AFTER)])).otherwise(pl.lit(""))
    )


def _marker_chars(n: pl.Expr) -> pl.Expr:
    return pl.when(n > 0).then(len(_BEFORE) + len(_AFTER) + n.cast(pl.String).str.len_chars()).otherwise(0)


def render(cut: pl.DataFrame) -> pl.Series:
    """The kept text of each cut observation, a marker in every gap (as spans.render, columnar)."""
    text = (
        _pieces(cut, "content")
        .with_columns(
            piece=pl.concat_str(
                [_marker(pl.col("gap")), pl.col("content").str.slice(pl.col("start"), pl.col("end") - pl.col("start"))]
            )
        )
        .group_by("row", maintain_order=True)
        .agg(pl.col("piece").str.join(""), tail=pl.col("length").first() - pl.col("end").last())
    )
    return text.select(pl.concat_str([pl.col("piece"), _marker(pl.col("tail"))]).alias("new_content")).to_series()


def saved_chars(cut: pl.DataFrame) -> pl.Series:
    """How many characters each cut removes, markers counted: the length less that of `render`'s text,
    without building the text."""
    kept = (
        _pieces(cut)
        .group_by("row", maintain_order=True)
        .agg(
            chars=(pl.col("end") - pl.col("start") + _marker_chars(pl.col("gap"))).sum(),
            length=pl.col("length").first(),
            end=pl.col("end").last(),
        )
    )
    tail = pl.col("length") - pl.col("end")
    return kept.select(pl.col("length") - pl.col("chars") - _marker_chars(tail)).to_series()


def cut(
    messages: pl.DataFrame,
    at_risk: pl.DataFrame,
    name: str,
    allowance: int,
    context: int,
    long: pl.DataFrame | None = None,
    text: bool = True,
) -> pl.DataFrame:
    """One row per truncated observation: kept spans, overflow beyond the allowance, the characters the cut
    saves and, with `text`, the new text (null without: rendering is most of a cut's cost)."""
    if long is None:
        long = long_observations(messages, at_risk, allowance)
    found = kept_spans(long, name, allowance, context)
    return found.with_columns(
        saved_chars=saved_chars(found),
        new_content=render(found) if text else pl.lit(None, pl.String),
    ).select(list(CUT_SCHEMA))


class Shown:
    """The occurrences of values before their first use, indexed once to test many cuts against them."""

    def __init__(self, occurrences: pl.DataFrame):
        occurrences = occurrences.with_row_index("occurrence")
        self.messages = occurrences.select(KEY).unique().with_row_index("message")  # the messages showing any
        self.places = occurrences.join(self.messages, on=KEY).select("occurrence", "message", "offset", "length")
        self.values = occurrences.select("occurrence", *VALUE)
        self.counts = occurrences.group_by(VALUE).agg(occurrences=pl.len())

    def survival(self, cuts: dict[str, pl.DataFrame]) -> pl.DataFrame:
        """Per (trajectory_id, norm) shown, `survives_<name>` for each cut of `cuts`: does any occurrence lie wholly
        in text the cut keeps (or in a message it leaves whole)? The cuts are tested together."""
        spans = pl.concat([c.select(*KEY, "kept_spans", cut=pl.lit(name)) for name, c in cuts.items()])
        lost = self.lost(spans, by=("cut",)).group_by(VALUE).agg(lost=pl.col("cut"))
        return self.counts.join(lost, on=VALUE, how="left").select(
            *VALUE, **{f"survives_{name}": ~pl.col("lost").list.contains(name).fill_null(False) for name in cuts}
        )

    def lost(self, cuts: pl.DataFrame, by: tuple[str, ...] = ()) -> pl.DataFrame:
        """The (trajectory_id, norm) whose every occurrence `cuts` removes: each lies in a cut message and in none
        of its kept spans; per value of the `by` columns when `cuts` holds several cuts. Only the cut messages that
        show a value are looked at: the others cannot lose one."""
        inside = (pl.col("start") <= pl.col("offset")) & (pl.col("offset") + pl.col("length") <= pl.col("end"))
        spans = cuts.lazy().join(self.messages.lazy(), on=KEY).select(*by, "message", "kept_spans")
        return (
            self.places.lazy()
            .join(spans, on="message")
            .explode("kept_spans")
            .unnest("kept_spans")
            .group_by(*by, "occurrence")
            .agg(kept=inside.fill_null(False).any())
            .filter(~pl.col("kept"))
            .join(self.values.lazy(), on="occurrence")
            .group_by(*by, *VALUE)
            .agg(removed=pl.len())
            .join(self.counts.lazy(), on=VALUE)
            .filter(pl.col("removed") == pl.col("occurrences"))
            .select(*by, *VALUE)
            .collect()
        )
