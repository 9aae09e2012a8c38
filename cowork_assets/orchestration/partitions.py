"""The units of work: one dynamic partition per raw batch folder, and the static task buckets of the selection."""

import dagster as dg

from cowork_assets.store.buckets import BUCKETS

batches = dg.DynamicPartitionsDefinition(name="batches")

# The selection's tables (dedup clusters, exclusions) are computed a task bucket at a time; a run of the cross-batch
# job covers every bucket (ALL_BUCKETS, in one run and one step per asset), and a run may also name a single bucket.
task_buckets = dg.StaticPartitionsDefinition(list(BUCKETS))
ALL_BUCKETS = {"dagster/asset_partition_range_start": BUCKETS[0], "dagster/asset_partition_range_end": BUCKETS[-1]}

# Steps that read or rewrite every batch's tables: at most one run holding any of them at a time
# (a Dagster pool, enforced per run by the run queue; see the instance's dagster.yaml).
CROSS_BATCH_POOL = "cowork_cross_batch"
