"""The code location: every asset, check, job, sensor and resource of cowork-curate.

This module is the entry point of `dagster dev` and of the runner's processes: it tunes the process
(`cowork_assets.runtime.tuning`) before anything imports polars, reads the environment `make ui` sets
(COWORK_RAW_ROOT, COWORK_DATA_ROOT, COWORK_REFRESH_CRON, COWORK_BATCHES_PER_RUN, COWORK_SENSOR_INTERVAL). The
package's `__init__` quiets the one Dagster warning the pipeline causes on purpose.
"""

import os

from cowork_assets.runtime.tuning import tune_process

tune_process()

import dagster as dg  # noqa: E402

from cowork_assets.datasets.assets import QualitySuites, dataset_checks
from cowork_assets.ingest.assets import raw_batches
from cowork_assets.orchestration.resources import settings_from_env
from dagster_project.jobs import (
    BATCH_ASSETS,
    CROSS_BATCH,
    PER_BATCH,
    WAREHOUSE,
    process_batch,
    refresh_corpus,
    refresh_warehouse,
    trace_sample_job,
)
from dagster_project.presentation import present
from dagster_project.schedules import daily_refresh
from dagster_project.sensors import interval_from, sensors

SETTINGS, ENV_PROBLEMS = settings_from_env()
for variable, problem in ENV_PROBLEMS.items():
    dg.get_dagster_logger().warning(f"{variable} refused ({problem}): its setting keeps its default")


defs = dg.Definitions(
    assets=present([raw_batches, *PER_BATCH, *CROSS_BATCH, *WAREHOUSE], SETTINGS.refresh_cron, BATCH_ASSETS),
    # The dataset gates are steps of their own (blocking: publication waits on them); every other check is
    # reported by its asset's own step (orchestration/specs.py StepCheck).
    asset_checks=dataset_checks,
    jobs=[process_batch, refresh_corpus, refresh_warehouse, trace_sample_job(SETTINGS)],
    sensors=sensors(interval_from(os.environ.get("COWORK_SENSOR_INTERVAL"))),
    schedules=[daily_refresh(SETTINGS.refresh_cron, ENV_PROBLEMS.get("COWORK_REFRESH_CRON"))],
    resources={"settings": SETTINGS, "suites": QualitySuites()},
    # Steps run inside the run's own process, as `cowork-curate run` runs them: a process per step cost
    # seconds each, far more than the steps themselves.
    executor=dg.in_process_executor,
)


def job_definition(name: str) -> dg.JobDefinition:
    """A job by name: what a reconstructable job of this code location rebuilds (cowork_cli/origin.py)."""
    return defs.resolve_job_def(name)
