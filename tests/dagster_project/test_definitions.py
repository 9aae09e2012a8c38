"""The code location loads and reads as the data flow; the sensor registers new batches."""

import dagster as dg

from cowork_assets.orchestration.partitions import batches, task_buckets
from cowork_assets.orchestration.resources import CurateSettings
from dagster_project.definitions import defs
from tests.conftest import ROOT


def test_definitions_load_with_groups_checks_and_jobs():
    repo = defs.get_repository_def()
    graph = repo.asset_graph
    groups = {k.to_user_string(): graph.get(k).group_name for k in graph.get_all_asset_keys()}
    groups = {k: g.split("_", 1)[1] for k, g in groups.items()}  # the UI's names carry their position in order
    assert groups == {
        "raw_batches": "raw",
        "trajectories": "staging",
        "messages": "staging",
        "tool_calls": "staging",
        "task_packages": "staging",
        "quarantine": "staging",
        "skipped_inputs": "staging",
        "evidence": "evidence",
        "curated_messages": "curation",
        "sample_stats": "curation",
        "evidence_audit": "curation",
        "evidence_rollup": "curation",
        "redactions": "curation",
        "truncation_sweep": "curation",
        "regrade": "validation",
        "structure_findings": "validation",
        "task_findings": "validation",
        "dedup_signatures": "selection",
        "dedup_clusters": "selection",
        "exclusions": "selection",
        "batch_manifest": "batches",
        **{
            name: "datasets"
            for name in (
                "sft_candidate",
                "rl_tasks_candidate",
                "rl_rollouts_candidate",
                "preference_candidate",
                "sft_dataset",
                "rl_tasks",
                "rl_rollouts",
                "preference_pairs",
                "dataset_card",
            )
        },
        "warehouse": "warehouse",
    }
    assert all(graph.get(k).description for k in graph.get_all_asset_keys())
    checks = {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys}
    assert len(checks) == 22 and all(graph.get_check_spec(k).description for k in graph.asset_check_keys)
    assert ("trajectories", "records_accounted_for") in checks
    assert {
        ("evidence_audit", "evidence_lost_to_truncation"),
        ("sample_stats", "evidence_lost_to_budget"),
        ("curated_messages", "strategy_comparison"),
        ("structure_findings", "samples_structurally_valid"),
        ("task_findings", "tasks_consistent"),
        ("dedup_clusters", "duplicate_rate"),
        ("sft_candidate", "quality_gate"),
        ("rl_tasks_candidate", "quality_gate"),
        ("rl_rollouts_candidate", "quality_gate"),
    } <= checks
    assert all(graph.get_check_spec(k).blocking for k in graph.asset_check_keys if k.name == "quality_gate")
    assert {a for a, n in checks if n == "matches_schema"} == {
        "trajectories",
        "messages",
        "tool_calls",
        "task_packages",
        "quarantine",
        "skipped_inputs",
    }
    assert {"process_batch", "refresh_corpus", "refresh_warehouse"} <= set(repo.job_names)
    refresh = repo.get_job("refresh_corpus")  # however it is launched, a run of it covers every task bucket
    assert refresh.partitions_def == task_buckets and task_buckets.get_partition_keys() == list("0123456789abcdef")
    assert refresh.tags["dagster/asset_partition_range_start"] == "0"
    assert refresh.tags["dagster/asset_partition_range_end"] == "f"
    assert {s.name for s in repo.sensor_defs} == {"new_batch_sensor", "corpus_refresh_sensor", "dead_run_sensor"}
    assert {repo.get_job(j).executor_def.name for j in repo.job_names} == {"in_process"}  # as the CLI runs them
    assert sorted({graph.get(k).group_name for k in graph.get_all_asset_keys()}) == [
        "1_raw",
        "2_staging",
        "3_evidence",
        "4_curation",
        "5_validation",
        "6_selection",
        "7_batches",
        "8_datasets",
        "9_warehouse",
    ]
    published = graph.get(dg.AssetKey("sft_dataset"))
    assert published.freshness_policy is not None and published.owners == ["team:cowork-curate"]
    assert published.code_version and published.tags["scope"] == "cross-batch"
    assert ("sft_dataset", "passed_quality_gate") in checks
    assert graph.get(dg.AssetKey("trajectories")).partitions_def.name == "batches"


def test_an_assets_code_version_covers_what_its_code_imports_and_nothing_else():
    from cowork_assets.runtime.code_versions import code_version, source_closure
    from dagster_project.presentation import defining_modules

    modules = defining_modules()
    assert (
        modules["evidence"] == "cowork_assets.evidence.assets"
        and modules["raw_batches"] == "cowork_assets.ingest.assets"
    )
    evidence = {p.relative_to(ROOT).as_posix() for p in source_closure("cowork_assets.evidence.assets")}
    assert {"cowork_assets/evidence/extract.py", "cowork_assets/check_types/db_match.py"} <= evidence  # imported
    assert "cowork_assets/store/storage.py" in evidence and "cowork_assets/datasets/publish.py" not in evidence
    ingest = {p.relative_to(ROOT).as_posix() for p in source_closure("cowork_assets.ingest.assets")}
    assert "cowork_assets/ingest/formats/tau2.py" in ingest  # a plugin: imported by discovery, not by name
    graph = defs.resolve_asset_graph()
    versions = {k.to_user_string(): graph.get(k).code_version for k in graph.get_all_asset_keys()}
    assert versions["evidence"] == code_version("cowork_assets.evidence.assets") != versions["sft_dataset"]
    assert versions["trajectories"] == versions["messages"]  # one module computes both


def _evaluate(sensor, instance, settings):
    with dg.build_sensor_context(instance=instance, resources={"settings": settings}) as context:
        return sensor(context)


def test_sensor_registers_new_batches_once_and_asks_each_state_of_its_batches_once(tmp_path):
    """Partitions are added once; batches not processed as they are get one run over them, whose key is their files'
    and settings' fingerprints, so Dagster starts it once per state (a new file is a new state)."""
    for name in ("b1", "b2", ".tmp"):
        (tmp_path / name).mkdir()
    settings = CurateSettings(raw_root=str(tmp_path), data_root=str(tmp_path / "out"))
    ranges = lambda result: [  # noqa: E731
        (r.partition_key_range.start, r.partition_key_range.end) if r.partition_key_range else r.partition_key
        for r in result.run_requests
    ]
    with dg.instance_for_test() as instance:
        result = _evaluate(defs.get_sensor_def("new_batch_sensor"), instance, settings)
        assert ranges(result) == [("b1", "b2")] and result.run_requests[0].partition_key is None
        assert result.dynamic_partitions_requests[0].partition_keys == ["b1", "b2"]
        instance.add_dynamic_partitions("batches", ["b1", "b2"])
        again = _evaluate(defs.get_sensor_def("new_batch_sensor"), instance, settings)
        assert not again.dynamic_partitions_requests
        assert [r.run_key for r in again.run_requests] == [r.run_key for r in result.run_requests]
        (tmp_path / "b3").mkdir()
        (tmp_path / "b1" / "a.jsonl").write_text("{}\n")
        third = _evaluate(defs.get_sensor_def("new_batch_sensor"), instance, settings)
        assert ranges(third) == [("b1", "b3")]
        assert third.run_requests[0].run_key != result.run_requests[0].run_key  # b1 changed, b3 is new: a new state
        assert third.dynamic_partitions_requests[0].partition_keys == ["b3"]
        (tmp_path / "b1" / "a.jsonl").unlink()
        (tmp_path / "b3").rmdir()
        assert [
            r.run_key for r in _evaluate(defs.get_sensor_def("new_batch_sensor"), instance, settings).run_requests
        ] == [result.run_requests[0].run_key]


def test_sensor_skips_cleanly_without_a_raw_root(tmp_path):
    settings = CurateSettings(raw_root=str(tmp_path / "missing"), data_root=str(tmp_path))
    with dg.instance_for_test() as instance:
        result = _evaluate(defs.get_sensor_def("new_batch_sensor"), instance, settings)
        assert isinstance(result, dg.SkipReason) and "not a directory" in result.skip_message


def test_every_column_of_every_table_is_described_for_the_ui():
    from cowork_assets.store.registry import REGISTRY

    assert len(REGISTRY) == 27
    for table in REGISTRY:
        assert all(col.description for col in table.model.to_schema().columns.values()), table.name


def test_the_registry_is_what_dagster_and_the_warehouse_see(tmp_path):
    """Every registered table is an asset with the registry's group, partitioning, deps and description, and
    every table but the candidates has its view; every other asset is one the registry names as not a
    table."""
    from cowork_assets.store.registry import REGISTRY
    from cowork_assets.warehouse.duckdb_file import view_statements

    specs = {s.key.to_user_string(): s for s in defs.resolve_all_asset_specs()}
    for table in REGISTRY:
        spec = specs[table.name]
        assert spec.group_name.endswith("_" + table.group) and spec.description == table.description, table.name
        assert {d.asset_key.to_user_string() for d in spec.deps} == set(table.inputs), table.name
        partitions = {"batch": batches, "bucket": task_buckets}.get(table.partitioned_by)
        assert spec.partitions_def == partitions, table.name
    assert set(specs) - {t.name for t in REGISTRY} == {"raw_batches", "batch_manifest", "dataset_card", "warehouse"}
    views = {name for name, _ in view_statements(str(tmp_path))}
    assert views == {t.name for t in REGISTRY if t.location != "candidate"} | {
        "cowork_data_root",
        "column_lineage",
        "publications",
    }


def test_the_daily_refresh_schedule_is_off_by_default_and_its_cron_is_a_setting(monkeypatch):
    import importlib

    import dagster_project.definitions as definitions

    schedule = definitions.defs.get_repository_def().get_schedule_def("daily_refresh")
    assert schedule.cron_schedule == "0 3 * * *" and schedule.job_name == "refresh_corpus"
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    monkeypatch.setenv("COWORK_REFRESH_CRON", "*/30 * * * *")
    reloaded = importlib.reload(definitions)
    assert reloaded.defs.get_repository_def().get_schedule_def("daily_refresh").cron_schedule == "*/30 * * * *"
    monkeypatch.delenv("COWORK_REFRESH_CRON")
    importlib.reload(definitions)


def test_source_links_go_to_the_repository_when_the_checkout_has_a_web_remote(tmp_path, monkeypatch):
    import subprocess

    from dagster_project import presentation
    from dagster_project.jobs import PER_BATCH

    git = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    (tmp_path / "f").write_text("x")
    git("add", "f")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    assert presentation.git_remote(tmp_path) is None  # no remote: links stay local files
    git("remote", "add", "origin", "/srv/mirror/cowork.git")
    assert presentation.git_remote(tmp_path) is None  # not a web host
    git("remote", "set-url", "origin", "git@github.com:acme/cowork-curate.git")
    commit = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert presentation.git_remote(tmp_path) == ("https://github.com/acme/cowork-curate", commit.stdout.strip())
    monkeypatch.setattr(presentation, "git_remote", lambda root: ("https://github.com/acme/cowork-curate", "abc123"))
    (evidence,) = [a for a in presentation.present(PER_BATCH, "0 3 * * *", set()) if dg.AssetKey("evidence") in a.keys]
    (reference,) = evidence.specs_by_key[dg.AssetKey("evidence")].metadata["dagster/code_references"].code_references
    assert reference.url.startswith(
        "https://github.com/acme/cowork-curate/tree/abc123/cowork_assets/evidence/assets.py#L"
    )
