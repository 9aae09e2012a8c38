"""Spend the allowance on windows of `context` characters around at-risk evidence first, then on the head;
keep every at-risk value, overflowing the allowance when the evidence alone needs more (this project's cut).

Observations without evidence are cut as `head` (columnar); only those holding evidence are computed
value by value (interval arithmetic, curation/spans.py).
"""

import polars as pl

from cowork_assets.curation.spans import evidence_spans
from cowork_assets.curation.strategies import SPAN, head

VERL_SIDE = None


def kept(observations: pl.DataFrame, allowance: int, context: int) -> pl.DataFrame:
    has_evidence = pl.col("cores").list.len().fill_null(0) > 0
    plain = head.kept(observations.filter(~has_evidence), allowance, context)
    rows = []
    for length, cores in observations.filter(has_evidence).select("length", "cores").iter_rows():
        found, overflow = evidence_spans(length, allowance, [(c["start"], c["end"]) for c in cores], context)
        rows.append(([{"start": s, "end": e} for s, e in found], overflow))
    windowed = observations.filter(has_evidence).hstack(
        pl.DataFrame(rows, schema={"kept_spans": pl.List(SPAN), "overflow_chars": pl.Int64}, orient="row")
    )
    return pl.concat([plain, windowed])
