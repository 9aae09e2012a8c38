"""Dagster's own cost of this pipeline's runs: the jobs' assets and checks, each step reporting them with no work.

`make bench` prints it beside the small batches and the fixed cost. A copy of the code location whose steps do
nothing still pays what Dagster does for each run: creating it with its planned materializations and checks, each
step's start, outputs and success, a materialization per asset and an evaluation per check with their data-version
look-ups, every event stored in the instance's SQLite files. A batch run, or the corpus refresh, of these assets and
checks on this storage costs at least as much, whatever the pipeline's own code does.

`python -m bench.framework_floor` compares the instance's storage: the per-batch figures on the SQLite instance
`cowork-curate run` writes (Dagster's SQLite storages keeping their database engines and connections:
`dagster_project/sqlite_storage.py`) and on the same files with Dagster's own (`storage: sqlite`), alternated.
"""

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from statistics import mean

import dagster as dg

from cowork_assets.orchestration.batch_events import batch_events
from cowork_assets.orchestration.partitions import batches, partition_tags


def _no_work_assets(assets: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """The same assets and checks in one step, partitioned, subset and pooled as the original, each reported
    materialized (in the original's order: a step reports its assets upstream first) and passed."""
    specs = list(assets.specs)

    @dg.multi_asset(
        name=assets.op.name,
        specs=[s.replace_attributes(partitions_def=None) for s in specs],
        check_specs=list(assets.check_specs),
        partitions_def=assets.partitions_def,
        backfill_policy=assets.backfill_policy,
        can_subset=assets.can_subset,
        pool=assets.op.pool,
    )
    def step(context: dg.AssetExecutionContext) -> Iterator:
        chosen = context.selected_asset_keys
        results = [dg.MaterializeResult(asset_key=s.key) for s in specs if s.key in chosen]
        results += _passed(context.selected_asset_check_keys)
        if assets.partitions_def == batches and len(context.partition_keys) > 1:  # each batch its own partition
            for batch in context.partition_keys:
                yield from batch_events(context, batch, results)
        else:
            yield from results

    return step


def _no_work_checks(checks: dg.AssetChecksDefinition) -> dg.AssetChecksDefinition:
    """The same checks (blocking as the original) in one step, each reported passed."""

    @dg.multi_asset_check(name=checks.op.name, specs=list(checks.check_specs), pool=checks.op.pool)
    def step(context: dg.AssetCheckExecutionContext) -> Iterator:
        yield from _passed(context.selected_asset_check_keys)

    return step


def _passed(keys) -> list[dg.AssetCheckResult]:
    ordered = sorted(keys, key=lambda k: (k.asset_key.to_user_string(), k.name))
    return [dg.AssetCheckResult(asset_key=key.asset_key, check_name=key.name, passed=True) for key in ordered]


def no_work_definitions() -> dg.Definitions:
    """The code location's batch and corpus jobs, over no-work copies of their assets and checks."""
    from cowork_assets.datasets.assets import dataset_checks
    from dagster_project.jobs import CROSS_BATCH, PER_BATCH, WAREHOUSE, process_batch, refresh_corpus, refresh_warehouse

    return dg.Definitions(
        assets=[_no_work_assets(a) for a in (*PER_BATCH, *CROSS_BATCH, *WAREHOUSE)],
        asset_checks=[_no_work_checks(c) for c in dataset_checks],
        jobs=[
            dg.define_asset_job(job.name, selection=job.selection, tags=job.tags)
            for job in (process_batch, refresh_corpus, refresh_warehouse)
        ],
        executor=dg.in_process_executor,
    )


# Dagster's own SQLite storages, on the same files: each creates a database engine for every connection.
DAGSTER_SQLITE = """storage:
  sqlite:
    base_dir: "{home}"
"""


def framework_floor(home: Path, batch_runs: int, dagster_sqlite: bool = False) -> dict:
    """Seconds Dagster alone takes for a batch run (the mean of `batch_runs` runs after a first one, each a new
    batch partition, one after another in this process), per batch in one run over those `batch_runs` batches, and
    for the corpus jobs once after them, on a fresh instance at `home`, as `cowork-curate run` configures it (with
    Dagster's own SQLite storages if `dagster_sqlite`)."""
    from cowork_cli.runner import INSTANCE_HEADER, console_logger, ensure_instance, instance_yaml
    from dagster_project.jobs import BATCH_JOB, CORPUS_JOBS

    shutil.rmtree(home, ignore_errors=True)
    if dagster_sqlite:  # a file without the tool's header line: ensure_instance keeps it as it is
        home.mkdir(parents=True)
        config = instance_yaml(home).removeprefix(INSTANCE_HEADER)
        storages = config[config.index("run_storage:") : config.index("run_coordinator:")]
        (home / "dagster.yaml").write_text(config.replace(storages, DAGSTER_SQLITE.format(home=home.resolve())))
    instance = ensure_instance(home)
    if dagster_sqlite != (type(instance.event_log_storage).__name__ == "SqliteEventLogStorage"):
        raise RuntimeError(f"the instance at {home} does not have the storage asked for")
    defs = no_work_definitions()
    names = [f"floor-{i:03d}" for i in range(batch_runs + 1)]
    instance.add_dynamic_partitions(batches.name, names)

    def timed(job: str, **partition) -> float:
        started = time.monotonic()
        result = defs.resolve_job_def(job).execute_in_process(
            instance=instance, run_config={"loggers": console_logger()}, **partition
        )
        if not result.success:
            raise RuntimeError(f"the no-work copy of {job} failed")
        return time.monotonic() - started

    first, *rest = (timed(BATCH_JOB, partition_key=name) for name in names)
    shared = timed(BATCH_JOB, tags=partition_tags(names[1], names[-1])) if batch_runs > 1 else None
    corpus = {job: round(timed(job), 2) for job in CORPUS_JOBS}
    return {
        "batch_runs": batch_runs,
        "first_batch_run_seconds": round(first, 2),
        "seconds_per_batch_run": round(mean(rest), 2) if rest else round(first, 2),
        "seconds_per_batch_in_one_run": round(shared / batch_runs, 2) if shared else None,
        "corpus_runs_seconds": corpus,
    }


if __name__ == "__main__":
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="Dagster alone, per batch run, on each instance storage")
    parser.add_argument("--runs", type=int, default=10, help="batch runs measured after a first [10]")
    parser.add_argument("--rounds", type=int, default=2, help="times each storage is measured, alternated [2]")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as work:  # on the disk the data root is on, not a RAM disk
        for _ in range(args.rounds):
            for dagster_sqlite in (False, True):
                floor = framework_floor(Path(work) / "home", args.runs, dagster_sqlite)
                name = (
                    "Dagster's own SQLite storages" if dagster_sqlite else "this tool's (engines and connections kept)"
                )
                print(
                    f"{name}: {floor['seconds_per_batch_run']:.2f} s per batch run, "
                    f"{floor['seconds_per_batch_in_one_run']:.2f} s per batch in one run over {args.runs}, "
                    f"{sum(floor['corpus_runs_seconds'].values()):.2f} s for the corpus jobs"
                )
