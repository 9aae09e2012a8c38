"""Spend the allowance on windows of `context` characters around at-risk evidence first, then on the head;
keep every at-risk value, overflowing the allowance when the evidence alone needs more (this project's cut).

Observations without evidence are cut as `head` (columnar); only those holding evidence are computed
value by value (interval arithmetic, curation/spans.py).
"""

import polars as pl

from cowork_assets.curation.spans import SPAN, evidence_spans
from cowork_assets.curation.strategies import head
from cowork_assets.store.models import nest

VERL_SIDE = None


def kept(observations: pl.DataFrame, allowance: int, context: int) -> pl.DataFrame:
    has_evidence = pl.col("cores").list.len().fill_null(0) > 0
    plain = head.kept(observations.filter(~has_evidence), allowance, context)
    windowed = observations.filter(has_evidence)
    # Spans cross into Python and back as flat columns (`nest`): per-span dicts each way took half the
    # time of the interval arithmetic itself.
    field = pl.col("cores").list.eval
    cores = windowed.select(
        "length", starts=field(pl.element().struct.field("start")), ends=field(pl.element().struct.field("end"))
    )
    rows, starts, ends, overflow = [], [], [], []
    for row, (length, core_starts, core_ends) in enumerate(cores.iter_rows()):
        found, over = evidence_spans(length, allowance, list(zip(core_starts, core_ends)), context)
        rows += [row] * len(found)
        starts += [s for s, _ in found]
        ends += [e for _, e in found]
        overflow.append(over)
    spans = pl.DataFrame({"row": rows, "start": starts, "end": ends}, schema={"row": pl.UInt32} | SPAN.to_schema())
    windowed = nest(windowed, spans, "row", "kept_spans", SPAN).with_columns(
        overflow_chars=pl.Series(overflow, dtype=pl.Int64)
    )
    return pl.concat([plain, windowed.select(*observations.columns, "kept_spans", "overflow_chars")])


# By construction every at-risk value is kept, so what the sweep needs of this strategy is only how many
# characters it keeps: the allowance, or the evidence alone when that needs more. Columnar, without the
# spans (the sweep asks at seven allowances).
KEEPS_ALL_EVIDENCE = True


def kept_chars(observations: pl.DataFrame, allowance: int, context: int) -> pl.DataFrame:
    """`trajectory_id`, `message_index`, `kept_chars` of each long observation: max(allowance, the union
    of its evidence spans)."""
    key = ["trajectory_id", "message_index"]
    spans = (
        observations.select("length", "cores")
        .with_row_index("row")
        .explode("cores")
        .unnest("cores")
        .with_columns(start=pl.col("start").clip(0, pl.col("length")), end=pl.col("end").clip(0, pl.col("length")))
        .sort("row", "start")
    )
    # How far the row's earlier spans reach: a running maximum over the whole frame, each row's ends
    # shifted past every earlier row's (a running maximum per row, `.over`, is far slower).
    base = pl.col("row").cast(pl.Int64) * (pl.col("length").max() + 1)
    reach = (pl.col("end") + base).cum_max().shift(1).fill_null(0) - base
    union = (
        spans.with_columns(reach=reach)  # before grouping: in `agg` it would run group by group
        .group_by("row")
        .agg(covered=(pl.col("end") - pl.max_horizontal("start", "reach")).clip(0).sum().fill_null(0))
    )
    return (
        observations.select(key)
        .with_row_index("row")
        .join(union, on="row", how="left", maintain_order="left")
        .select(*key, kept_chars=pl.max_horizontal(pl.lit(allowance), pl.col("covered").fill_null(0)).cast(pl.Int64))
    )
