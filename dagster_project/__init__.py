"""The code location. Importing any of it (the CLI imports its jobs) first quiets the two Dagster warnings the
pipeline causes on purpose: partitioned asset checks (one result per batch) and a single-run backfill policy (the
task buckets' backfill is one run) are "preview" and "beta" features of Dagster 1.13, used deliberately with Dagster
pinned, so the warnings would be noise on every load."""

import warnings

warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec")
warnings.filterwarnings("ignore", message="Parameter `backfill_policy` of function `asset`")
