"""Keep the first `allowance` characters (verl's side `left`)."""

import polars as pl

from cowork_assets.truncation.spans import allowance_of, positional, span_list

VERL_SIDE = "left"


def kept(observations: pl.DataFrame, allowance: int | pl.Expr, context: int) -> pl.DataFrame:
    return positional(observations, span_list((pl.lit(0), allowance_of(allowance))))
