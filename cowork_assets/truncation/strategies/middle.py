"""Keep the first half of the allowance and the last `allowance - allowance // 2` characters (verl's side
`middle`), cutting the middle out."""

import polars as pl

from cowork_assets.truncation.spans import positional, span_list

VERL_SIDE = "middle"


def kept(observations: pl.DataFrame, allowance: int, context: int) -> pl.DataFrame:
    first, last = allowance // 2, allowance - allowance // 2
    return positional(observations, span_list((pl.lit(0), pl.lit(first)), (pl.col("length") - last, pl.col("length"))))
