"""The unit of incremental work: one dynamic partition per raw batch folder."""

import warnings

import dagster as dg

# Partitioned asset checks (one result per batch) are a "preview" feature of Dagster 1.13; we rely
# on them deliberately and pin Dagster, so the warning is noise on every CLI call.
warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec")

batches = dg.DynamicPartitionsDefinition(name="batches")

# Steps that read or rewrite every batch's tables: at most one run holding any of them at a time
# (a Dagster pool, enforced per run by the run queue; see the instance's dagster.yaml).
CROSS_BATCH_POOL = "cowork_cross_batch"
