"""The code location: every asset, check, job, sensor and resource of cowork-curate."""

import dagster as dg

from cowork_assets.curation.assets import curation_checks
from cowork_assets.datasets.assets import dataset_checks
from cowork_assets.ingest.assets import raw_batches, records_accounted_for, schema_checks
from cowork_assets.selection.assets import selection_checks
from cowork_assets.settings import settings_from_env
from cowork_assets.validation.assets import validation_checks
from dagster_project.jobs import CROSS_BATCH, PER_BATCH, process_batch, refresh_corpus
from dagster_project.sensors import new_batch_sensor

# Jobs the CLI runs in order: every per-batch asset for each batch, then the cross-batch ones.
BATCH_JOB = process_batch.name
CORPUS_JOB = refresh_corpus.name

defs = dg.Definitions(
    assets=[raw_batches, *PER_BATCH, *CROSS_BATCH],
    asset_checks=[records_accounted_for, *schema_checks, *curation_checks, *validation_checks, *selection_checks,
                  *dataset_checks],
    jobs=[process_batch, refresh_corpus],
    sensors=[new_batch_sensor],
    resources={"settings": settings_from_env()},
)
