"""Deterministic train/validation split by task: a task's runs all land in one split."""

import polars as pl

SALT = "cowork-curate/split/v1"


def split_expr(task_id: pl.Expr, validation_fraction: float) -> pl.Expr:
    """`validation` for a stable hash of the task id below the fraction, else `train`."""
    bucket = pl.concat_str([pl.lit(SALT), task_id]).hash(20261129) % 1_000_000
    return pl.when(bucket < int(validation_fraction * 1_000_000)).then(pl.lit("validation")).otherwise(pl.lit("train"))
