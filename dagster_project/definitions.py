"""The code location: every asset, check, job, sensor and resource of cowork-curate."""

import dagster as dg

from cowork_assets.curation.assets import curation, curation_checks
from cowork_assets.evidence.assets import evidence
from cowork_assets.ingest.assets import raw_batches, records_accounted_for, schema_checks, staging_tables
from cowork_assets.settings import settings_from_env
from cowork_assets.warehouse.assets import warehouse
from dagster_project.jobs import process_batch, refresh_corpus
from dagster_project.sensors import new_batch_sensor

# Jobs the CLI runs in order: every per-batch asset for each batch, then the cross-batch ones.
BATCH_JOB = process_batch.name
CORPUS_JOB = refresh_corpus.name

defs = dg.Definitions(
    assets=[raw_batches, staging_tables, evidence, curation, warehouse],
    asset_checks=[records_accounted_for, *schema_checks, *curation_checks],
    jobs=[process_batch, refresh_corpus],
    sensors=[new_batch_sensor],
    resources={"settings": settings_from_env()},
)
