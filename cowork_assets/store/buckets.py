"""Task buckets: the cross-batch selection (dedup clusters, exclusions) split into a fixed set of parts by task.

Every rule of the selection stage looks within one task (duplicates are clustered within a task, the cap counts a
task's runs, a holdout or a consistency error excludes a task), so the parts are independent: a step holds one
bucket's runs at a time, and a run may compute one bucket alone. A task's bucket is the first hex digit of the
SHA-256 of its id: stable across processes, machines and library versions (polars' hash is not).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator

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


# Runs a selection step holds at once: buckets smaller than this are worked together (a bucket's fixed cost, paid
# 16 times on a small corpus, is most of its time); a larger bucket is worked alone.
GROUP_RUNS = 20_000


def consecutive_groups(sizes: Iterable[tuple[str, int]], max_runs: int | None = None) -> list[list[str]]:
    """The names of `sizes` ((name, runs) in order: buckets, batches) gathered into consecutive groups of at most
    `max_runs` (by default `GROUP_RUNS`) runs, a name over it alone."""
    max_runs = max_runs or GROUP_RUNS
    groups: list[list[str]] = []
    held = 0
    for name, n in sizes:
        if not groups or held + n > max_runs:
            groups.append([])
            held = 0
        groups[-1].append(name)
        held += n
    return groups


def bucket_groups(buckets: Iterable[str], bucket_of_runs: pl.Series, max_runs: int | None = None) -> list[list[str]]:
    """`buckets` in order, gathered into consecutive groups of at most `max_runs` (by default `GROUP_RUNS`) runs, a
    bucket over it alone; `bucket_of_runs` is each run's bucket."""
    counts = dict(bucket_of_runs.value_counts().iter_rows())
    return consecutive_groups(((bucket, counts.get(bucket, 0)) for bucket in buckets), max_runs)


def split_by_bucket(frame: pl.DataFrame, group: list[str]) -> Iterator[tuple[str, pl.DataFrame]]:
    """(bucket, its rows of `frame`, by task_id) for each bucket of `group`, one with no rows included."""
    parts = frame.with_columns(task_buckets(frame["task_id"])).partition_by("bucket", as_dict=True, include_key=False)
    for bucket in group:
        yield bucket, parts.get((bucket,), frame.clear())
