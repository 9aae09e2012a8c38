"""Keep the last `allowance` characters (verl's side `right`)."""

import polars as pl

from cowork_assets.truncation.spans import positional, span_list

VERL_SIDE = "right"


def kept(observations: pl.DataFrame, allowance: int, context: int) -> pl.DataFrame:
    return positional(observations, span_list((pl.col("length") - allowance, pl.col("length"))))
