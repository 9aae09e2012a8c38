"""Task buckets: the cross-batch selection (dedup clusters, exclusions) split into a fixed set of parts by task.

Every rule of the selection stage looks within one task (duplicates are clustered within a task, the cap counts a
task's runs, a holdout or a consistency error excludes a task), so the parts are independent: a step holds one
bucket's runs at a time, and a run may compute one bucket alone. A task's bucket is the first hex digit of the
SHA-256 of its id: stable across processes, machines and library versions (polars' hash is not).
"""

from __future__ import annotations

import hashlib

import polars as pl

BUCKETS = tuple("0123456789abcdef")


def task_buckets(task_ids: pl.Series) -> pl.Series:
    """Each task id's bucket (one of `BUCKETS`; a missing id's is the first, so no row is in none); hashed once per
    distinct id."""
    distinct = task_ids.drop_nulls().unique()
    digits = [hashlib.sha256(t.encode()).hexdigest()[0] for t in distinct]
    return (
        task_ids.replace_strict(distinct, digits, default=None, return_dtype=pl.String)
        .fill_null(BUCKETS[0])
        .alias("bucket")
    )
