"""Every asset check and gate, made to fail on crafted input, failing where a user looks: the check's
result in the run, `cowork-curate run`'s exit status (1 when an ERROR check or a gate fails) and the
summary it prints (the check's name and its numbers).

Each run is one small batch through the CLI in this process (one batch runs in process), so a test can
break ingest on purpose with monkeypatch. `strategy_comparison` is informational (it never fails) and
`passed_quality_gate` marks a version that was published, so a failing gate shows as no new version.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from cowork_assets.ingest import batch as ingest_batch
from cowork_assets.ingest.formats import cowork
from cowork_assets.store import storage, versions
from cowork_assets.synthetic.generate import generate
from cowork_cli.cli import main
from tests.conftest import TESTS

HOSTILE = TESTS / "hostile" / "corpus"


@pytest.fixture(scope="module")
def small_raw(tmp_path_factory) -> Path:
    raw = tmp_path_factory.mktemp("small") / "raw"
    generate(raw, trajectories=60, batches=1, seed=21)
    return raw


def _run(raw: Path, tmp: Path, capsys, *settings: str) -> tuple[int, str, str]:
    """(exit status, printed summary, batch) of `cowork-curate run` over a copy of `raw`."""
    copy = tmp / "raw"
    if not copy.exists():
        shutil.copytree(raw, copy)
    (batch,) = [p.name for p in copy.iterdir() if p.is_dir()]
    args = ["run", "--raw-root", str(copy), "--data-root", str(tmp / "curated"), "--dagster-home", str(tmp / "home")]
    capsys.readouterr()
    status = main(args + [a for s in settings for a in ("--set", s)])
    return status, capsys.readouterr().out, batch


def _launch_refresh(tmp: Path, **settings) -> list[str]:
    """refresh_corpus as the UI or the schedule launches it, on `_run`'s folders: its failed steps' errors."""
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import _run_config, ensure_instance
    from dagster_project.definitions import defs

    config = CurateSettings(raw_root=str(tmp / "raw"), data_root=str(tmp / "curated"), max_duplicate_rate=0, **settings)
    result = defs.resolve_job_def("refresh_corpus").execute_in_process(
        run_config=_run_config(config), instance=ensure_instance(tmp / "home"), raise_on_error=False
    )
    return [str(e.event_specific_data.error) for e in result.all_events if e.event_type_value == "STEP_FAILURE"]


def _failed(summary: str) -> dict[str, list[str]]:
    """FAILED CHECK (ERROR) and WARNING CHECK (WARN) headings of the summary -> the detail lines printed under each."""
    out, current = {}, None
    for line in summary.splitlines():
        if line.startswith(("FAILED CHECK ", "WARNING CHECK ")):
            current = line.split(" CHECK ", 1)[1]
            assert line.startswith("WARNING") == current.endswith("(WARN)"), line
            out[current] = []
        elif current and line.startswith("  "):
            out[current].append(line.strip())
        elif current and not line.strip():
            current = None
    return out


def test_settings_that_lose_evidence_fail_the_error_checks_and_the_run(small_raw, tmp_path, capsys):
    """head truncation loses at-risk values, a tight drop budget removes passing samples, no duplicates are
    tolerated, and an orphan tool result breaks a sample's structure."""
    shutil.copytree(small_raw, tmp_path / "raw")
    (batch,) = [p for p in (tmp_path / "raw").iterdir() if p.is_dir()]
    shutil.copy(HOSTILE / "orphan-result" / "a.jsonl", batch / "orphan.jsonl")
    status, summary, b = _run(
        small_raw,
        tmp_path,
        capsys,
        "truncation_strategy=head",
        "char_budget=2500",
        "budget_policy=drop",
        "max_duplicate_rate=0",
    )
    failed = _failed(summary)
    assert status == 1
    lost = failed[f"evidence_audit:evidence_lost_to_truncation [{b}] (ERROR)"]
    assert any(line.startswith("lost_items: ") and int(line.split(": ")[1]) > 0 for line in lost)
    budget = failed[f"sample_stats:evidence_lost_to_budget [{b}] (ERROR)"]
    assert any(line.startswith("removed: ") and int(line.split(": ")[1]) > 0 for line in budget), budget
    assert f"structure_findings:samples_structurally_valid [{b}] (WARN)" in failed
    assert "invalid_samples: 1" in failed[f"structure_findings:samples_structurally_valid [{b}] (WARN)"]
    assert not any("strategy_comparison" in name for name in failed)  # informational: never fails
    # A failed ERROR check blocks publication, naming the batch and the checks; the cross-batch steps do not run.
    blocked = next(line for line in summary.splitlines() if line.startswith("not refreshing the corpus:"))
    assert f"ERROR check(s) failed on batch(es) {b} (evidence_audit:evidence_lost_to_truncation, " in blocked
    assert not (tmp_path / "curated" / "published").exists() and "dedup_clusters:duplicate_rate (WARN)" not in failed
    # The verdict lives with the data: another instance (a fresh home, another machine on the bucket) finds the batch
    # up to date and refuses it for the same checks, from its manifest.
    fresh = ["--dagster-home", str(tmp_path / "other-home")]
    args = ["run", "--raw-root", str(tmp_path / "raw"), "--data-root", str(tmp_path / "curated"), *fresh]
    capsys.readouterr()
    settings = ("truncation_strategy=head", "char_budget=2500", "budget_policy=drop", "max_duplicate_rate=0")
    again = main(args + [a for s in settings for a in ("--set", s)])
    elsewhere = capsys.readouterr().out
    assert again == 1 and f"batch {b}: up to date" in elsewhere
    assert f"ERROR check(s) failed on batch(es) {b} (evidence_audit:evidence_lost_to_truncation, " in elsewhere
    assert not (tmp_path / "curated" / "published").exists()
    manifest = json.loads((tmp_path / "curated" / "state" / "manifests" / f"{b}.json").read_text())
    verdict = manifest["verdict"]
    assert verdict["checks"]["evidence_audit:evidence_lost_to_truncation"] == {"passed": False, "severity": "ERROR"}
    assert verdict["instance"] == str(tmp_path / "home") and len(verdict["checks"]) >= 10
    # The same on the UI's path: a refresh launched by hand or by the schedule fails at its publish steps.
    launched = _launch_refresh(tmp_path, truncation_strategy="head", char_budget=2500, budget_policy="drop")
    assert len(launched) == 4 and all(f"ERROR check(s) failed on batch(es) {b} (" in e for e in launched)
    assert not (tmp_path / "curated" / "published").exists()
    # Published as they are when asked: the batch is up to date, the cross-batch checks run.
    settings = ("truncation_strategy=head", "char_budget=2500", "budget_policy=drop", "max_duplicate_rate=0")
    status, summary, b = _run(small_raw, tmp_path, capsys, *settings, "publish_despite_failed_checks=true")
    failed = _failed(summary)
    assert f"batch {b}: up to date" in summary and (tmp_path / "curated" / "published" / "sft_dataset").is_dir()
    assert "dedup_clusters:duplicate_rate (WARN)" in failed
    assert "task_findings:tasks_consistent (WARN)" in failed  # the generator's injected inconsistencies


def test_warnings_alone_do_not_fail_the_run(small_raw, tmp_path, capsys):
    status, summary, b = _run(small_raw, tmp_path, capsys)
    failed = _failed(summary)
    assert status == 0 and failed and all(name.endswith("(WARN)") for name in failed)


def test_grader_agreement_tolerates_the_disagreement_it_is_told_to(tmp_path, capsys):
    generate(tmp_path / "source", trajectories=60, batches=1, seed=24)  # runs whose recorded grade is wrong
    status, summary, b = _run(tmp_path / "source", tmp_path, capsys)
    assert status == 0 and f"regrade:grader_agreement [{b}] (WARN)" in _failed(summary)
    # The published dataset says which batches failed which checks: its overview shows one partition only.
    assert f"| regrade:grader_agreement | WARN | 1 of 1 | {b} |" in _batch_checks(tmp_path)
    status, summary, b = _run(tmp_path / "source", tmp_path, capsys, "min_grader_agreement=0.5")
    assert status == 0 and f"regrade:grader_agreement [{b}] (WARN)" not in _failed(summary)
    assert "regrade:grader_agreement" not in _batch_checks(tmp_path)


def _batch_checks(tmp: Path) -> str:
    """The `batch_checks` summary of sft_dataset's latest materialization in `_run`'s instance."""
    import dagster as dg

    from cowork_cli.runner import ensure_instance

    event = ensure_instance(tmp / "home").get_latest_materialization_event(dg.AssetKey("sft_dataset"))
    return event.asset_materialization.metadata["batch_checks"].value


def test_a_record_ingest_loses_and_tables_that_break_their_model_fail_the_ingest_checks(
    small_raw, tmp_path, capsys, monkeypatch
):
    """Ingest is broken on purpose: the cowork reader drops each file's second line, and every staging table
    gets one value its pandera model forbids. The independent recount and the schema checks notice."""
    reader = cowork.records
    monkeypatch.setattr(cowork, "records", lambda s, b: (x for i, x in enumerate(reader(s, b)) if i != 1))
    corrupt = {
        "trajectories": pl.col("n_messages") * 0,  # ge=1
        "messages": pl.col("chars") - 10**9,  # ge=0
        "tool_calls": pl.col("call_index") - 1,  # ge=0
        "task_packages": pl.col("n_tools") - 100,  # ge=0
        "quarantine": pl.col("raw_record") * 0,  # ge=1
        "skipped_inputs": pl.lit(None, pl.String).alias("reason"),  # not nullable
    }

    class Corrupting(storage.ParquetSink):
        def write(self, frame: pl.DataFrame) -> None:
            table = next((part for part in Path(self.final).parts if part in corrupt), None)  # written aside or not
            if table and frame.height:
                frame = frame.with_columns(corrupt[table])
            super().write(frame)

    class CorruptingPackages(ingest_batch.ArrowScratch):  # task packages are gathered here before their file
        def write(self, frame: pl.DataFrame) -> None:
            super().write(frame.with_columns(corrupt["task_packages"]) if frame.height else frame)

    monkeypatch.setattr(storage, "ParquetSink", Corrupting)  # every table's sink (the registry makes them)
    monkeypatch.setattr(ingest_batch, "ArrowScratch", CorruptingPackages)
    shutil.copytree(small_raw, tmp_path / "raw")
    (batch,) = [p for p in (tmp_path / "raw").iterdir() if p.is_dir()]
    (batch / "notes.txt").write_text("not raw data")  # one skipped input, so skipped_inputs has a row
    status, summary, b = _run(small_raw, tmp_path, capsys)
    failed = _failed(summary)
    assert status == 1
    files = len([p for p in batch.iterdir() if p.name.endswith((".jsonl", ".jsonl.gz"))])
    assert f"unaccounted: {files}" in failed[f"trajectories:records_accounted_for [{b}] (ERROR)"]
    for table in corrupt:
        assert f"{table}:matches_schema [{b}] (ERROR)" in failed, (table, sorted(failed))


GATED = {  # dataset -> (its candidate, the function that builds it, a change its gate refuses)
    "sft_dataset": ("sft_candidate", "build_sft", {"score": pl.lit(2.0)}),
    "rl_tasks": ("rl_tasks_candidate", "build_rl_tasks", {"data_source": pl.lit(None, pl.String)}),
    "rl_rollouts": ("rl_rollouts_candidate", "build_rl_rollouts", {"grpo_advantage": pl.lit(float("nan"))}),
}


def test_candidates_that_fail_their_gates_fail_the_run_and_are_never_published(
    small_raw, tmp_path, capsys, monkeypatch
):
    from cowork_assets.datasets import assets

    def corrupting(build, change):
        def corrupted(*args, **kwargs):
            return build(*args, **kwargs).with_columns(**change)

        return corrupted

    for _, builder, change in GATED.values():
        monkeypatch.setattr(assets, builder, corrupting(getattr(assets, builder), change))
    status, summary, _ = _run(small_raw, tmp_path, capsys)
    failed = _failed(summary)
    assert status == 1
    for dataset, (candidate, _, change) in GATED.items():
        details = "\n".join(failed[f"{candidate}:quality_gate (ERROR)"])
        assert "failed_expectations: 0" not in details and "failed_expectations: " in details, dataset
        assert all(column in details for column in change), (dataset, details)  # the failing column is named
        assert versions.current(str(tmp_path / "curated"), dataset) is None  # nothing was ever published


def test_a_refused_batch_is_held_back_and_the_others_publish(small_raw, tmp_path, capsys):
    """hold_back_refused_batches: a tight drop budget refuses the synthetic batch (its long runs lose evidence); a
    batch of short real tau-bench runs passes; the second is published alone, the first named with its checks."""
    shutil.copytree(small_raw, tmp_path / "raw")
    (bad,) = [p.name for p in (tmp_path / "raw").iterdir() if p.is_dir()]
    good = tmp_path / "raw" / "2026-12-01-short"
    good.mkdir()
    run = {
        "schema": "cowork.trajectory/v1",
        "trajectory_id": "short-1",
        "task": {"task_id": "short-task", "category": "single_turn", "request": "Say hi to Ana.", "checks": []},
        "teacher": {"model": "m", "role": "teacher"},
        "messages": [{"role": "user", "content": "Say hi to Ana."}, {"role": "assistant", "content": "Hi Ana!"}],
        "grade": {"score": 1.0, "passed": True, "checks": {}},
    }
    other = {
        **run,
        "trajectory_id": "short-2",
        "task": {**run["task"], "task_id": "short-task-2", "request": "Say bye to Bo."},
        "messages": [{"role": "user", "content": "Say bye to Bo."}, {"role": "assistant", "content": "Bye Bo!"}],
    }
    (good / "runs.jsonl").write_text(json.dumps(run) + "\n" + json.dumps(other) + "\n")
    settings = ("char_budget=2500", "budget_policy=drop", "hold_back_refused_batches=true")
    args = ["run", "--raw-root", str(tmp_path / "raw"), "--data-root", str(tmp_path / "curated")]
    capsys.readouterr()
    status = main([*args, "--dagster-home", str(tmp_path / "home"), *(a for s in settings for a in ("--set", s))])
    summary = capsys.readouterr().out
    assert status == 1  # an ERROR check failed: something to look at, though the rest is published
    held = next(line for line in summary.splitlines() if line.startswith("holding back batch(es)"))
    assert held.startswith(f"holding back batch(es) {bad} (sample_stats:evidence_lost_to_budget")
    published = tmp_path / "curated" / "published"
    sft = pl.read_parquet(published / "sft_dataset" / "current" / "*.parquet")
    assert set(sft["batch"]) == {"2026-12-01-short"} and sft.height == 2
    rollouts = pl.read_parquet(published / "rl_rollouts" / "current" / "*.parquet")
    assert bad not in set(rollouts["batch"]) if rollouts.height else True
    exclusions = pl.read_parquet(tmp_path / "curated" / "tables" / "exclusions" / "*" / "*.parquet")
    refused = exclusions.filter(pl.col("criterion") == "batch", pl.col("dataset") == "sft")
    runs = pl.read_parquet(tmp_path / "curated" / "tables" / "trajectories" / f"batch={bad}" / "*.parquet")
    assert set(refused["trajectory_id"]) == set(runs["trajectory_id"])
    assert refused["detail"][0].startswith("its run failed ERROR check(s): sample_stats:evidence_lost_to_budget")
    card = (published / "sft_dataset" / "current" / "card.md").read_text()
    assert f"Held back, their runs in no dataset (hold_back_refused_batches): {bad}." in card
    assert f"| {bad} |" in card and "| no: held back |" in card
