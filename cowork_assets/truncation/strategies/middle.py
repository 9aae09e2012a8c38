"""Keep the first half of the allowance and the last `allowance - allowance // 2` characters (verl's side
`middle`), cutting the middle out."""

import polars as pl

from cowork_assets.truncation.spans import allowance_of, positional, span_list

VERL_SIDE = "middle"


def kept(observations: pl.DataFrame, allowance: int | pl.Expr, context: int) -> pl.DataFrame:
    allowance = allowance_of(allowance)
    first, last = allowance // 2, allowance - allowance // 2
    return positional(observations, span_list((pl.lit(0), first), (pl.col("length") - last, pl.col("length"))))
