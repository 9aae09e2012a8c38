"""The code location. Importing any of it (the CLI imports its jobs) first quiets the one Dagster warning the
pipeline causes on purpose: partitioned asset checks (one result per batch) are a "preview" feature of Dagster
1.13, used deliberately with Dagster pinned, so the warning would be noise on every load."""

import warnings

warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec")
