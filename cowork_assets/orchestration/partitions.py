"""The unit of incremental work: one dynamic partition per raw batch folder."""

import dagster as dg

batches = dg.DynamicPartitionsDefinition(name="batches")

# Steps that read or rewrite every batch's tables: at most one run holding any of them at a time
# (a Dagster pool, enforced per run by the run queue; see the instance's dagster.yaml).
CROSS_BATCH_POOL = "cowork_cross_batch"
