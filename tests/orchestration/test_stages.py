"""A batch run's stages as one Dagster step: what it declares, what a run of some of its tables does, and which
stage a failed run stopped in."""

import os

import dagster as dg
import pytest
from polars.testing import assert_frame_equal

from cowork_assets.orchestration.specs import SINGLE_RUN
from cowork_assets.orchestration.stages import failed_stage
from cowork_assets.settings import Settings
from cowork_assets.store.registry import TABLES

STAGES = {
    "staging_tables": ["trajectories", "messages", "tool_calls", "task_packages", "quarantine", "skipped_inputs"],
    "evidence": ["evidence"],
    "curation": ["curated_messages", "sample_stats", "evidence_audit", "evidence_rollup", "redactions"],
    "truncation_sweep": ["truncation_sweep"],
    "structure_findings": ["structure_findings"],
    "regrade": ["regrade"],
    "dedup_signatures": ["dedup_signatures"],
    "batch_manifest": ["batch_manifest"],
}


def test_a_batch_run_is_one_step_whose_stages_write_every_per_batch_table_in_order():
    from dagster_project.definitions import defs, job_definition
    from dagster_project.jobs import BATCH_STAGES, batch_stages

    assert [node.name for node in job_definition("process_batch").graph.nodes] == ["batch_stages"]
    # a backfill from the UI takes up to the default batches_per_run batches to a run, each its own partition
    assert batch_stages.backfill_policy == dg.BackfillPolicy.multi_run(Settings().batches_per_run) != SINGLE_RUN
    assert all(spec.skippable for spec in batch_stages.specs)  # a batch that fails is not materialized
    assert {s.name: [k.to_user_string() for k in s.keys] for s in BATCH_STAGES} == STAGES
    assert list(STAGES) == [s.name for s in BATCH_STAGES]  # in the order they read each other's tables
    per_batch = {t.name for t in TABLES.values() if t.per_batch and t.location == "tables"}
    assert {k for keys in STAGES.values() for k in keys} == per_batch | {"batch_manifest"}
    graph = defs.resolve_asset_graph()
    checks = {str(k) for s in BATCH_STAGES for k in s.check_keys}
    assert len(checks) == 12 and checks <= {str(k) for k in graph.asset_check_keys}
    # Each table keeps its own lineage inside the step, and its stage's module as its code version.
    assert graph.get(dg.AssetKey("evidence")).parent_keys >= {dg.AssetKey("trajectories"), dg.AssetKey("messages")}
    assert graph.get(dg.AssetKey("evidence")).code_version != graph.get(dg.AssetKey("regrade")).code_version


def test_the_stage_a_failed_run_stopped_in_is_the_first_that_did_not_report_everything():
    from dagster_project.jobs import BATCH_STAGES

    tables = lambda *names: {dg.AssetKey(t) for n in names for t in STAGES[n]}  # noqa: E731
    staging_checks = {k for s in BATCH_STAGES if s.name == "staging_tables" for k in s.check_keys}
    assert failed_stage(BATCH_STAGES, set()) == "staging_tables"
    assert failed_stage(BATCH_STAGES, tables("staging_tables")) == "staging_tables"  # its checks did not report
    assert failed_stage(BATCH_STAGES, tables("staging_tables") | staging_checks) == "evidence"
    assert failed_stage(BATCH_STAGES, tables("staging_tables", "evidence") | staging_checks) == "curation"
    everything = {k for s in BATCH_STAGES for k in (*s.keys, *s.check_keys)}
    assert failed_stage(BATCH_STAGES, everything) is None


@pytest.fixture()
def copied(pipeline, pipeline_copy):
    _, instance, _ = pipeline
    return pipeline_copy, sorted(instance.get_dynamic_partitions("batches"))[0]


def _run(settings, batch, selection):
    from dagster_project.jobs import batch_stages

    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [batch])
    return dg.materialize(
        [batch_stages],
        selection=selection,
        partition_key=batch,
        resources={"settings": settings},
        instance=instance,
        raise_on_error=False,
    )


def test_materializing_one_stages_table_runs_that_stage_alone(copied):
    settings, batch = copied
    before = TABLES["evidence"].read(settings.root, batch)
    staged = os.stat(TABLES["messages"].committed_file(settings.root, batch)).st_ino
    written = os.stat(TABLES["evidence"].committed_file(settings.root, batch)).st_ino
    result = _run(settings, batch, ["evidence"])
    assert result.success
    assert [e.asset_key.to_user_string() for e in result.get_asset_materialization_events()] == ["evidence"]
    assert os.stat(TABLES["evidence"].committed_file(settings.root, batch)).st_ino != written  # written again
    assert_frame_equal(TABLES["evidence"].read(settings.root, batch), before)
    assert os.stat(TABLES["messages"].committed_file(settings.root, batch)).st_ino == staged  # ingest did not run


def test_materializing_part_of_a_stages_tables_fails_naming_them_all_and_writes_nothing(copied):
    settings, batch = copied
    staged = os.stat(TABLES["messages"].committed_file(settings.root, batch)).st_ino
    result = _run(settings, batch, ["messages", "evidence"])
    assert not result.success and result.get_asset_materialization_events() == []
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert (
        "staging_tables writes its tables together: select all of trajectories, messages, tool_calls, "
        "task_packages, quarantine, skipped_inputs" in str(failure.step_failure_data.error)
    )
    assert os.stat(TABLES["messages"].committed_file(settings.root, batch)).st_ino == staged
