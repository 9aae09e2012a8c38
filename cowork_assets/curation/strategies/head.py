"""Keep the first `allowance` characters (verl's side `left`)."""

import polars as pl

from cowork_assets.curation.strategies import positional, spans

VERL_SIDE = "left"


def kept(observations: pl.DataFrame, allowance: int, context: int) -> pl.DataFrame:
    return positional(observations, spans((pl.lit(0), pl.lit(allowance))))
