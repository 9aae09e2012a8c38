"""Deterministic train/validation split by task: a task's runs all land in one split; a task a benchmark's own
split puts on its training side always lands in `train`."""

import polars as pl

SALT = "cowork-curate/split/v1"


def split_expr(task_id: pl.Expr, validation_fraction: float, training_side: pl.Series | None = None) -> pl.Expr:
    """`validation` for a stable hash of the task id below the fraction, else `train`; `train` for the tasks of
    `training_side`."""
    bucket = pl.concat_str([pl.lit(SALT), task_id]).hash(20261129) % 1_000_000
    validation = bucket < int(validation_fraction * 1_000_000)
    if training_side is not None and training_side.len():
        validation = validation & ~task_id.is_in(training_side.implode())
    return pl.when(validation).then(pl.lit("validation")).otherwise(pl.lit("train"))
