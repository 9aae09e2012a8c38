"""The settings as a Dagster resource: the same fields as `settings.Settings`, set per run from the launchpad, and
what every run does when it starts and ends."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
from pydantic import ValidationError

from cowork_assets.orchestration import verdict
from cowork_assets.orchestration.partitions import PARTITION
from cowork_assets.orchestration.run_health import DATA_ROOT_TAG, record_process
from cowork_assets.runtime import scratch
from cowork_assets.settings import DEFAULT_DATA_ROOT, DEFAULT_RAW_ROOT, Settings, cron_problem
from cowork_assets.store import aside, lease
from cowork_assets.store.registry import REGISTRY
from cowork_assets.store.root_format import ensure_format
from cowork_assets.store.storage import normalize_root

# What a run of batches writes (its tables and their manifests); a run of these alone publishes nothing.
PER_BATCH_ASSETS = frozenset({t.name for t in REGISTRY if t.per_batch} | {verdict.MANIFEST.to_user_string()})


def _publishes(run: dg.DagsterRun) -> bool:
    """A run of cross-batch steps (they rewrite shared tables and publish): not of one batch or several, nor the
    read-only trace."""
    if run.job_name in ("process_batch", "trace_sample") or PARTITION in run.tags:
        return False
    selected = {key.to_user_string() for key in run.asset_selection or ()}
    return not selected or not selected <= PER_BATCH_ASSETS


class CurateSettings(dg.ConfigurableResource, Settings):
    """Settings of the cowork-curate pipeline: every stage's group in one resource."""

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """Every run records the process that executes it, so a run whose process dies can be found, and the data
        root it writes (a tag the UI shows: one instance may hold the runs of several), sweeps what killed runs
        left, and keeps its scratch files under the data root."""
        if context.run is None:  # a sensor's evaluation
            return
        ensure_format(self.root)  # a root this code cannot read fails the run in one line, before any step
        if context.instance is not None:
            record_process(context.instance, context.run.run_id)
            context.instance.add_run_tags(context.run.run_id, {DATA_ROOT_TAG: self.root})
        if swept := scratch.sweep(self.local_root):
            context.log.info(f"removed {swept} scratch or temporary file(s) left by killed runs")
        scratch.use(self.local_root)
        if _publishes(context.run) and lease.applies(self.root):  # machines of other instances take turns
            lease.hold(self.root, "publisher", lambda holder: context.log.info(f"waiting for {holder}'s publishing"))

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if context.run is not None:
            scratch.release()
            aside.end_all()
            if _publishes(context.run):
                lease.let_go(self.root, "publisher")


ENVIRONMENT = {
    "raw_root": "COWORK_RAW_ROOT",
    "data_root": "COWORK_DATA_ROOT",
    "refresh_cron": "COWORK_REFRESH_CRON",
    "batches_per_run": "COWORK_BATCHES_PER_RUN",
}


def settings_from_env() -> tuple[CurateSettings, dict[str, str]]:
    """Settings for code locations (`dagster dev`) from COWORK_RAW_ROOT, COWORK_DATA_ROOT, COWORK_REFRESH_CRON and
    COWORK_BATCHES_PER_RUN, and the problems of values that were refused (variable -> why). A bad value falls
    back to the default so the definitions still load; the problem is shown where the value is used (the schedule),
    or logged when the code location loads."""
    given = {name: os.environ[var] for name, var in ENVIRONMENT.items() if os.environ.get(var)}
    problems = {}
    if "refresh_cron" in given and (problem := cron_problem(given["refresh_cron"])):
        problems[ENVIRONMENT["refresh_cron"]] = problem
        del given["refresh_cron"]
    if "batches_per_run" in given:
        try:
            Settings(batches_per_run=given["batches_per_run"])
        except ValidationError as error:
            problems[ENVIRONMENT["batches_per_run"]] = error.errors()[0]["msg"]
            del given["batches_per_run"]
    return CurateSettings(
        raw_root=str(Path(given.pop("raw_root", DEFAULT_RAW_ROOT)).resolve()),
        data_root=normalize_root(given.pop("data_root", DEFAULT_DATA_ROOT)),
        **given,
    ), problems
