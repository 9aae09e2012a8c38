"""Keep the first `allowance` characters (verl's side `left`)."""

import polars as pl

from cowork_assets.truncation.spans import positional, span_list

VERL_SIDE = "left"


def kept(observations: pl.DataFrame, allowance: int, context: int) -> pl.DataFrame:
    return positional(observations, span_list((pl.lit(0), pl.lit(allowance))))
