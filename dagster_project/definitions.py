"""The code location: every asset, check, job, sensor and resource of cowork-curate."""

import dagster as dg

from cowork_assets.ingest.assets import (
    ingest_job,
    new_batch_sensor,
    raw_batches,
    records_accounted_for,
    schema_checks,
    staging_tables,
)
from cowork_assets.settings import settings_from_env
from cowork_assets.warehouse.assets import warehouse, warehouse_job

# Jobs the CLI runs in order: every per-batch asset for each batch, then the cross-batch ones.
BATCH_JOB = ingest_job.name
CORPUS_JOB = warehouse_job.name

defs = dg.Definitions(
    assets=[raw_batches, staging_tables, warehouse],
    asset_checks=[records_accounted_for, *schema_checks],
    jobs=[ingest_job, warehouse_job],
    sensors=[new_batch_sensor],
    resources={"settings": settings_from_env()},
)
