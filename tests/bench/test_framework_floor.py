"""Dagster's own cost is measured on a copy of the jobs with the very assets, checks and partitions of the code
location: a copy that drifted from it would measure another graph."""

import dagster as dg
import pytest

from bench.framework_floor import framework_floor, no_work_definitions
from dagster_project.definitions import defs
from dagster_project.jobs import BATCH_JOB, CORPUS_JOBS

JOBS = (BATCH_JOB, *CORPUS_JOBS)


def _shape(definitions: dg.Definitions, job: str) -> tuple:
    """A job's assets with their partitions, steps (subsettable or not, pooled) and dependencies, its checks
    (blocking or not), and its tags."""
    resolved = definitions.resolve_job_def(job)
    graph = resolved.asset_layer.asset_graph
    assets = {
        k.to_user_string(): (
            repr(graph.get(k).partitions_def),
            graph.get(k).assets_def.op.name,
            graph.get(k).assets_def.can_subset,
            graph.get(k).assets_def.op.pool,
            sorted(p.to_user_string() for p in graph.get(k).parent_keys),
        )
        for k in resolved.asset_layer.executable_asset_keys
    }
    checks = {
        (k.asset_key.to_user_string(), k.name, graph.get_check_spec(k).blocking)
        for k in resolved.asset_layer.asset_graph.asset_check_keys
        if k.asset_key in resolved.asset_layer.executable_asset_keys
    }
    return assets, checks, dict(resolved.tags)


@pytest.mark.parametrize("job", JOBS)
def test_the_no_work_copy_has_the_jobs_assets_checks_partitions_and_steps(job):
    real, copy = _shape(defs, job), _shape(no_work_definitions(), job)
    assert copy == real
    assets, checks, _ = real
    assert len(assets) == {BATCH_JOB: 17, "refresh_corpus": 12, "refresh_warehouse": 1}[job]
    assert len(checks) == {BATCH_JOB: 12, "refresh_corpus": 10, "refresh_warehouse": 0}[job]


def test_dagster_alone_is_timed_on_runs_that_report_every_asset_and_check(tmp_path):
    figures = framework_floor(tmp_path / "home", batch_runs=2)
    assert figures["batch_runs"] == 2 and set(figures["corpus_runs_seconds"]) == set(CORPUS_JOBS)
    assert figures["first_batch_run_seconds"] > 0 and figures["seconds_per_batch_run"] > 0
    assert figures["seconds_per_batch_in_one_run"] > 0
    assert all(seconds > 0 for seconds in figures["corpus_runs_seconds"].values())
    instance = dg.DagsterInstance.from_config(str(tmp_path / "home"))
    runs = instance.get_run_records()
    assert sorted(r.dagster_run.job_name for r in runs) == [BATCH_JOB] * 4 + sorted(CORPUS_JOBS)
    assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    shared, *single = [r.dagster_run for r in runs if r.dagster_run.job_name == BATCH_JOB]  # newest first
    for run, partitions in ((single[0], [single[0].tags["dagster/partition"]]), (shared, ["floor-001", "floor-002"])):
        events = instance.all_logs(run.run_id)
        materialized = [e for e in events if e.dagster_event and e.dagster_event.is_step_materialization]
        evaluated = [
            e for e in events if e.dagster_event and e.dagster_event.event_type_value == "ASSET_CHECK_EVALUATION"
        ]
        assert (len(materialized), len(evaluated)) == (17 * len(partitions), 12 * len(partitions))
        assert sorted({e.dagster_event.partition for e in materialized}) == partitions
        assert sorted({e.asset_check_evaluation.partition for e in evaluated}) == partitions  # each batch's own


def test_the_storage_comparison_runs_on_dagsters_own_storages_on_the_same_files(tmp_path):
    """The figure the instance's storage choice rests on (docs/performance.md) is measured on the storages it
    names: Dagster's own, a file per run's events as this tool's."""
    home = tmp_path / "home"
    figures = framework_floor(home, batch_runs=1, dagster_sqlite=True)
    assert figures["seconds_per_batch_run"] > 0
    with dg.DagsterInstance.from_config(str(home)) as instance:
        kinds = [type(s).__name__ for s in (instance.run_storage, instance.event_log_storage)]
        assert kinds == ["SqliteRunStorage", "SqliteEventLogStorage"]
        runs = instance.get_runs()
        assert len(runs) == 2 + len(CORPUS_JOBS) and all(instance.all_logs(r.run_id) for r in runs)
    written = sorted(p.name for p in (home / "history" / "runs").glob("*.db"))
    assert written == sorted(["index.db", *(f"{r.run_id}.db" for r in runs)])
