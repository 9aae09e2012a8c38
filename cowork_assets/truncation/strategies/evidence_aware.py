"""Spend the allowance on windows of `context` characters around at-risk evidence first, then on the head;
keep every at-risk value, overflowing the allowance when the evidence alone needs more (this project's cut).

Observations without evidence are cut as `head`; those holding evidence get the spans of `spans.evidence_spans`,
computed in polars where the windows of full context fit the allowance or the evidence alone does not, and by
`evidence_spans` itself, one observation at a time, where the windows must narrow to fit.
"""

import polars as pl

from cowork_assets.store.models import nest
from cowork_assets.truncation.spans import SPAN, allowance_of, evidence_spans, merged, reach
from cowork_assets.truncation.strategies import head

VERL_SIDE = None


def kept(observations: pl.DataFrame, allowance: int, context: int) -> pl.DataFrame:
    has_evidence = pl.col("cores").list.len().fill_null(0) > 0
    plain = head.kept(observations.filter(~has_evidence), allowance, context)
    windowed = observations.filter(has_evidence)
    spans, overflow, left = _windows(windowed, allowance, context)
    spans = pl.concat([spans, _in_python(windowed, left, allowance, context)]).sort("row", "start")
    windowed = nest(windowed, spans, "row", "kept_spans", SPAN).with_columns(overflow_chars=overflow.cast(pl.Int64))
    return pl.concat([plain, windowed.select(*observations.columns, "kept_spans", "overflow_chars")])


def _evidence(rows: pl.DataFrame) -> pl.DataFrame:
    """(row, start, end): each row's evidence spans (`cores`) within its `length`."""
    length = pl.col("length")
    return (
        rows.explode("cores")
        .unnest("cores")
        .select("row", start=pl.col("start").clip(0, length), end=pl.col("end").clip(0, length))
    )


def _total(spans: pl.DataFrame, name: str) -> pl.DataFrame:
    return spans.group_by("row").agg((pl.col("end") - pl.col("start")).sum().alias(name))


def _windows(windowed: pl.DataFrame, allowance: int, context: int) -> tuple[pl.DataFrame, pl.Series, pl.Series]:
    """`evidence_spans` for every row at once where its windows of full context fit the allowance (the usual
    case) or its evidence alone does not: (row, start, end) spans, each row's overflow, and the rows left to
    `evidence_spans` (those whose windows must be narrowed)."""
    rows = windowed.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"), "length", "cores")
    length = pl.col("length")
    cores = merged(_evidence(rows))
    windows = merged(
        cores.join(rows.select("row", "length"), on="row").select(
            "row", start=(pl.col("start") - context).clip(0), end=(pl.col("end") + context).clip(upper_bound=length)
        )
    )
    sizes = (
        rows.select("row", "length")
        .join(_total(cores, "evidence"), on="row", how="left")
        .join(_total(windows, "windows"), on="row", how="left")
    )
    alone = sizes.filter(pl.col("evidence") >= allowance)["row"]  # the evidence alone: kept, overflowing
    fits = sizes.filter(pl.col("evidence") < allowance, pl.col("windows") <= allowance)["row"]
    spans = pl.concat(
        [
            cores.join(alone.to_frame(), on="row", how="semi"),
            merged(
                pl.concat(
                    [_heads(windows, sizes, fits, allowance), windows.join(fits.to_frame(), on="row", how="semi")]
                )
            ),
        ]
    )
    evidence = pl.col("evidence")
    overflow = sizes.sort("row").select(pl.when(evidence >= allowance).then(evidence - allowance).otherwise(0))
    left = sizes.filter(~pl.col("row").is_in(pl.concat([alone, fits]).implode()))["row"]
    return spans, overflow.to_series(), left


def _heads(windows: pl.DataFrame, sizes: pl.DataFrame, fits: pl.Series, allowance: int) -> pl.DataFrame:
    """(row, 0, end): the head of each row whose windows fit. It takes what the windows leave: it reaches the point
    before which as many characters lie outside the windows as the allowance has left over (`evidence_spans` grows
    it by the slack until it does)."""
    first = (pl.col("row") != pl.col("row").shift(1)).fill_null(True)  # a row's first window
    gaps = (
        windows.join(fits.to_frame(), on="row", how="semi")
        .join(sizes.select("row", "length", "windows"), on="row", maintain_order="left")
        .with_columns(
            spare=allowance - pl.col("windows"),
            gap=pl.col("start") - pl.when(first).then(0).otherwise(pl.col("end").shift(1)),
        )
        .with_columns(  # the characters outside the windows up to each window's start
            before=pl.col("gap").cum_sum() - pl.when(first).then(pl.col("gap").cum_sum() - pl.col("gap")).forward_fill()
        )
    )
    reached = gaps.filter(pl.col("before") >= pl.col("spare")).group_by("row", maintain_order=True).first()
    ends = gaps.group_by("row", maintain_order=True).last()
    return pl.concat(
        [
            reached.select("row", "length", end=pl.col("start") - (pl.col("before") - pl.col("spare"))),
            ends.join(reached, on="row", how="anti").select(
                "row", "length", end=pl.col("end") + pl.col("spare") - pl.col("before")
            ),
        ]
    ).select("row", start=pl.lit(0, pl.Int64), end=pl.min_horizontal("end", "length"))


def _in_python(windowed: pl.DataFrame, left: pl.Series, allowance: int, context: int) -> pl.DataFrame:
    """(row, start, end) spans of the `left` rows, by `evidence_spans`."""
    field = pl.col("cores").list.eval
    cores = (
        windowed.with_row_index("row")
        .filter(pl.col("row").is_in(left.implode()))
        .select(
            "row",
            "length",
            starts=field(pl.element().struct.field("start")),
            ends=field(pl.element().struct.field("end")),
        )
    )
    found = []
    for row, length, starts, ends in cores.iter_rows():
        spans, _ = evidence_spans(length, allowance, list(zip(starts, ends)), context)
        found += [(row, s, e) for s, e in spans]
    return pl.DataFrame(found, schema={"row": pl.UInt32} | SPAN.to_schema(), orient="row")


# By construction every at-risk value is kept, so what the sweep needs of this strategy is only how many
# characters it keeps: the allowance, or the evidence alone when that needs more. Columnar, without the
# spans (the sweep asks at seven allowances).
KEEPS_ALL_EVIDENCE = True


def kept_chars(observations: pl.DataFrame, allowance: int | pl.Expr, context: int) -> pl.DataFrame:
    """`trajectory_id`, `message_index`, `kept_chars` of each long observation: max(allowance, the union
    of its evidence spans). `allowance` may be each row's (an expression)."""
    key = ["trajectory_id", "message_index"]
    spans = _evidence(observations.select("length", "cores").with_row_index("row")).sort("row", "start")
    covered = (  # each span's characters past the reach of its row's earlier ones
        spans.with_columns(reach=reach())  # before grouping: in `agg` it would run group by group
        .group_by("row")
        .agg(covered=(pl.col("end") - pl.max_horizontal("start", "reach")).clip(0).sum())
    )
    return (
        observations.select(*key, allowance=allowance_of(allowance))
        .with_row_index("row")
        .join(covered, on="row", how="left", maintain_order="left")
        .select(*key, kept_chars=pl.max_horizontal("allowance", pl.col("covered").fill_null(0)).cast(pl.Int64))
    )
