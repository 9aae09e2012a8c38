"""One run over several batches: each batch its own partition (materializations, checks, manifest, failure), a batch
that fails leaves the others' outputs in place and is retried alone, by the CLI and by the sensor."""

from __future__ import annotations

import json

import dagster as dg
import pytest

import cowork_assets.evidence.assets as evidence_assets
from bench.harness import step_spans
from cowork_assets.orchestration import verdict
from cowork_assets.orchestration.partitions import batches
from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.synthetic.generate import generate
from cowork_cli.runner import ensure_instance, materialize_all
from dagster_project.definitions import defs
from dagster_project.jobs import BATCH_STAGES

CHECKS = {f"{k.asset_key.to_user_string()}:{k.name}" for s in BATCH_STAGES for k in s.check_keys}


def _batch_runs(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    """The instance's process_batch runs, oldest first."""
    return [r.dagster_run for r in reversed(instance.get_run_records(dg.RunsFilter(job_name="process_batch")))]


def _manifest(settings: CurateSettings, batch: str) -> dict | None:
    path = settings.local_root / "state" / "manifests" / f"{batch}.json"
    return json.loads(path.read_text()) if path.exists() else None


@pytest.fixture
def three(tmp_path):
    generate(tmp_path / "raw", trajectories=24, batches=3, seed=5)
    settings = CurateSettings(raw_root=str(tmp_path / "raw"), data_root=str(tmp_path / "curated"))
    return (
        settings,
        ensure_instance(tmp_path / "home"),
        sorted(p.name for p in (tmp_path / "raw").iterdir() if p.is_dir()),
    )


def test_a_batch_that_fails_among_others_fails_alone_and_is_retried_alone(three, monkeypatch):
    settings, instance, names = three
    first, bad, last = names
    build = evidence_assets.build_evidence

    def planted(batch, *args):
        if batch == bad:
            raise RuntimeError("planted failure")
        return build(batch, *args)

    monkeypatch.setattr(evidence_assets, "build_evidence", planted)
    lines: list[str] = []
    outcome = materialize_all(settings, instance, echo=lines.append)

    shared, alone = _batch_runs(instance)
    assert (shared.tags["dagster/asset_partition_range_start"], shared.tags["dagster/asset_partition_range_end"]) == (
        first,
        last,
    )
    assert shared.status == alone.status == dg.DagsterRunStatus.FAILURE and alone.tags["dagster/partition"] == bad
    assert f"[2/3] batch {bad}: FAILED in a run of 3" in lines
    assert any(line.startswith(f"retried alone: batch {bad}: FAILED") for line in lines)
    assert list(outcome.failed) == [bad, "publication"] and "planted failure" in outcome.failed[bad]

    # The others of the run were written, each with a manifest holding its own checks only.
    assert [(_manifest(settings, b) or {}).get("run_id") for b in names] == [shared.run_id, None, shared.run_id]
    for batch in (first, last):
        assert set(_manifest(settings, batch)["verdict"]["checks"]) == CHECKS
    status = instance.get_status_by_partition(verdict.MANIFEST, names, batches)
    assert [status[b] for b in names] == [
        dg.AssetPartitionStatus.MATERIALIZED,
        dg.AssetPartitionStatus.FAILED,
        dg.AssetPartitionStatus.MATERIALIZED,
    ]
    assert verdict.failed_batches(instance, names) == [bad]

    # Each check evaluated once per batch that reached it, for that batch, naming that batch's materialization: the
    # failing batch's staging checks (before evidence) too.
    staging = dg.AssetCheckKey(dg.AssetKey("trajectories"), "records_accounted_for")
    curation = dg.AssetCheckKey(dg.AssetKey("evidence_audit"), "evidence_lost_to_truncation")
    for key, reached in ((staging, names), (curation, [first, last])):
        history = instance.event_log_storage.get_asset_check_execution_history(key, limit=10)
        history = [r for r in history if r.run_id == shared.run_id]  # not the retry's
        history = [r for r in history if r.status.value in ("SUCCEEDED", "FAILED")]
        assert sorted(r.partition for r in history) == reached
        for record in history:
            target = record.event.asset_check_evaluation.target_materialization_data
            written = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=key.asset_key, asset_partitions=[record.partition]), limit=5
            ).records
            assert target.storage_id == next(w.storage_id for w in written if w.run_id == shared.run_id)

    # The bench splits the shared run's step into each batch's stages (the failing batch's reach staging alone).
    spans = [name for name, start, end in step_spans(instance, shared.run_id) if end >= start]
    assert (spans.count("staging_tables"), spans.count("curation"), spans.count("batch_manifest")) == (3, 2, 2)

    # The sensor asks for the failed batch alone (the others are processed).
    with dg.build_sensor_context(instance=instance, resources={"settings": settings}) as context:
        requests = defs.get_sensor_def("new_batch_sensor")(context)
    assert [(r.partition_key, r.run_key.split(":")[1]) for r in requests.run_requests] == [(bad, bad)]

    # Once its cause is gone, the next run takes it alone and the corpus is published.
    monkeypatch.setattr(evidence_assets, "build_evidence", build)
    again = materialize_all(settings, instance, echo=lines.append)
    assert again.failed == {} and again.skipped == [first, last]
    assert _batch_runs(instance)[-1].tags["dagster/partition"] == bad
    assert verdict.failed_batches(instance, names) == []
