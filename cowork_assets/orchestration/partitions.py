"""The units of work: one dynamic partition per raw batch folder, and the static task buckets of the selection."""

from collections.abc import Collection, Mapping, Sequence

import dagster as dg

from cowork_assets.store.buckets import BUCKETS

batches = dg.DynamicPartitionsDefinition(name="batches")

# The selection's tables (dedup clusters, exclusions) are computed a task bucket at a time; a run of the cross-batch
# job covers every bucket (ALL_BUCKETS, in one run and one step per asset), and a run may also name a single bucket.
task_buckets = dg.StaticPartitionsDefinition(list(BUCKETS))
PARTITION, RANGE_START, RANGE_END = (
    "dagster/partition",
    "dagster/asset_partition_range_start",
    "dagster/asset_partition_range_end",
)


def batch_runs(
    order: Sequence[str], todo: Collection[str], per_run: int, alone: Collection[str] = ()
) -> list[list[str]]:
    """The batches of `todo` as runs: each run consecutive partitions in `order` (a run covers a range of them), at
    most `per_run` of them, and each batch of `alone` in a run of its own (a batch whose last run failed is retried
    without the others)."""
    runs: list[list[str]] = []
    previous = None
    for i, batch in enumerate(order):
        if batch not in todo:
            continue
        if batch in alone:
            runs.append([batch])
        elif runs and previous == i - 1 and runs[-1][-1] not in alone and len(runs[-1]) < per_run:
            runs[-1].append(batch)
        else:
            runs.append([batch])
        previous = i
    return runs


def partition_tags(first: str, last: str) -> dict[str, str]:
    """A run's tags for the partitions `first` to `last` (one partition, or a range in the definition's order)."""
    return {PARTITION: first} if first == last else {RANGE_START: first, RANGE_END: last}


def run_partitions(tags: Mapping[str, str], order: Sequence[str]) -> list[str]:
    """The partitions a run with these tags covers: its partition, or its range in `order` (the definition's)."""
    if PARTITION in tags:
        return [tags[PARTITION]]
    if tags.get(RANGE_START) in order and tags.get(RANGE_END) in order:
        return list(order[order.index(tags[RANGE_START]) : order.index(tags[RANGE_END]) + 1])
    return []


ALL_BUCKETS = partition_tags(BUCKETS[0], BUCKETS[-1])

# Steps that read or rewrite every batch's tables: at most one run holding any of them at a time
# (a Dagster pool, enforced per run by the run queue; see the instance's dagster.yaml).
CROSS_BATCH_POOL = "cowork_cross_batch"
