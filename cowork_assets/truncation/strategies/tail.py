"""Keep the last `allowance` characters (verl's side `right`)."""

import polars as pl

from cowork_assets.truncation.spans import allowance_of, positional, span_list

VERL_SIDE = "right"


def kept(observations: pl.DataFrame, allowance: int | pl.Expr, context: int) -> pl.DataFrame:
    return positional(observations, span_list((pl.col("length") - allowance_of(allowance), pl.col("length"))))
