"""The code location: every asset, check, job, sensor and resource of cowork-curate."""

import dagster as dg

from cowork_assets.curation.assets import curation_checks
from cowork_assets.datasets.assets import QualitySuites, dataset_checks
from cowork_assets.ingest.assets import raw_batches, records_accounted_for, schema_checks
from cowork_assets.selection.assets import selection_checks
from cowork_assets.settings import settings_from_env
from cowork_assets.validation.assets import validation_checks
from dagster_project.jobs import CROSS_BATCH, PER_BATCH, WAREHOUSE, process_batch, refresh_corpus, refresh_warehouse
from dagster_project.schedules import daily_refresh
from dagster_project.sensors import new_batch_sensor

SETTINGS, ENV_PROBLEMS = settings_from_env()

# Jobs the CLI runs in order: every per-batch asset for each batch, then the cross-batch ones, then the
# warehouse (even when a cross-batch step failed).
BATCH_JOB = process_batch.name
CORPUS_JOBS = (refresh_corpus.name, refresh_warehouse.name)

defs = dg.Definitions(
    assets=[raw_batches, *PER_BATCH, *CROSS_BATCH, *WAREHOUSE],
    asset_checks=[records_accounted_for, *schema_checks, *curation_checks, *validation_checks, *selection_checks,
                  *dataset_checks],
    jobs=[process_batch, refresh_corpus, refresh_warehouse],
    sensors=[new_batch_sensor],
    schedules=[daily_refresh(SETTINGS.refresh_cron, ENV_PROBLEMS.get("COWORK_REFRESH_CRON"))],
    resources={"settings": SETTINGS, "suites": QualitySuites()},
)
