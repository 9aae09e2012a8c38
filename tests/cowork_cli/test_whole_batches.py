"""A batch is whole or not processed, and damage is never read as data: a changed raw file redoes its batch, a
folder still being written (or without its completion marker) waits, a batch's tables are verified against its
manifest before anything is built from them, a damaged published version is republished, and a data root or
instance this code cannot read is refused in one line."""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import dagster as dg
import orjson
import polars as pl
import pytest

from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.store import batch_state
from cowork_assets.synthetic.generate import generate
from cowork_cli.cli import main
from cowork_cli.runner import _run_config, ensure_instance


@pytest.fixture
def raw(tmp_path) -> Path:
    generate(tmp_path / "raw", trajectories=16, batches=2, seed=11)
    return tmp_path / "raw"


def _batches(raw: Path) -> list[str]:
    return sorted(p.name for p in raw.iterdir() if p.is_dir())


def _run(raw: Path, tmp_path: Path, capsys, *more: str) -> tuple[int, str]:
    args = ["run", "--raw-root", str(raw), "--data-root", str(tmp_path / "curated")]
    capsys.readouterr()
    status = main([*args, "--dagster-home", str(tmp_path / "home"), *more])
    out = capsys.readouterr()
    return status, out.out + out.err


def _rows(tmp_path: Path, table: str, batch: str) -> int:
    return pl.read_parquet(tmp_path / "curated" / "tables" / table / f"batch={batch}" / "data.parquet").height


def _sft(tmp_path: Path) -> list[str]:
    files = tmp_path / "curated" / "published" / "sft_dataset" / "current" / "*.parquet"
    return sorted(pl.read_parquet(files)["sample_id"].to_list())


def _launch_refresh(raw: Path, tmp_path: Path) -> list[str]:
    """A refresh_corpus run as the UI or the schedule launches it: the errors of its failed steps."""
    from dagster_project.definitions import defs

    settings = CurateSettings(raw_root=str(raw), data_root=str(tmp_path / "curated"))
    result = defs.resolve_job_def("refresh_corpus").execute_in_process(
        run_config=_run_config(settings), instance=ensure_instance(tmp_path / "home"), raise_on_error=False
    )
    return [str(e.event_specific_data.error) for e in result.all_events if e.event_type_value == "STEP_FAILURE"]


def test_a_raw_file_changed_after_a_run_redoes_its_batch_and_only_it(raw, tmp_path, capsys):
    a, b = _batches(raw)
    assert _run(raw, tmp_path, capsys)[0] == 0
    quarantined = _rows(tmp_path, "quarantine", a)
    with (raw / a / "part-000.jsonl").open("a") as fh:
        fh.write("appended after the run, not JSON\n")
    status, out = _run(raw, tmp_path, capsys)
    assert status == 0 and f"batch {b}: up to date" in out and f"batch {a}: up to date" not in out
    assert _rows(tmp_path, "quarantine", a) == quarantined + 1
    # A file made unreadable, then readable again: each change of the folder is a new state, each is redone.
    (raw / a / "part-000.jsonl").chmod(0)
    assert f"batch {a}: up to date" not in _run(raw, tmp_path, capsys)[1]
    (raw / a / "part-000.jsonl").chmod(0o644)
    status, out = _run(raw, tmp_path, capsys)
    assert status == 0 and f"batch {a}: up to date" not in out and _rows(tmp_path, "quarantine", a) == quarantined + 1
    assert f"batch {a}: up to date" in _run(raw, tmp_path, capsys)[1]


def test_a_folder_still_being_written_is_waited_for_and_one_without_its_marker_left_for_later(raw, tmp_path, capsys):
    a, b = _batches(raw)
    past = time.time() - 60
    for path in [*raw.rglob("*"), raw / a]:
        os.utime(path, (past, past))
    (raw / b / "part-000.jsonl").touch()  # b is being written now
    # 4 s leaves a loaded machine time to reach the check before b has settled.
    status, out = _run(raw, tmp_path, capsys, "--set", "settle_seconds=4")
    assert status == 0 and re.search(rf"batch {b}: waiting: its files changed [0-3]s ago", out)
    assert out.index(f"batch {b}: waiting") < out.index("refresh_corpus: ok") and _rows(tmp_path, "trajectories", b)
    # A completion marker: b has none yet, so a is processed and published alone.
    (raw / a / "_SUCCESS").touch()
    data = tmp_path / "marked"
    args = ["run", "--raw-root", str(raw), "--data-root", str(data), "--dagster-home", str(tmp_path / "home2")]
    assert main([*args, "--set", "batch_ready_marker=_SUCCESS"]) == 0
    assert f"batch {b}: not read now: no _SUCCESS file in the folder yet" in capsys.readouterr().out
    assert batch_state.processed_batches(str(data)) == [a]
    (raw / b / "_SUCCESS").touch()
    assert main([*args, "--set", "batch_ready_marker=_SUCCESS"]) == 0
    assert batch_state.processed_batches(str(data)) == [a, b]


def test_the_sensor_comes_back_for_a_folder_once_it_is_quiet(raw, tmp_path):
    from dagster_project.definitions import defs

    settings = CurateSettings(raw_root=str(raw), data_root=str(tmp_path / "curated"), settle_seconds=30)
    a, b = _batches(raw)
    past = time.time() - 60
    for path in [*(raw / a).rglob("*"), raw / a]:
        os.utime(path, (past, past))
    with (
        dg.instance_for_test() as instance,
        dg.build_sensor_context(instance=instance, resources={"settings": settings}) as context,
    ):
        result = defs.get_sensor_def("new_batch_sensor")(context)
        assert [r.partition_key for r in result.run_requests] == [a]
        assert result.dynamic_partitions_requests[0].partition_keys == [a, b]  # registered, not run yet
        for path in [*(raw / b).rglob("*"), raw / b]:
            os.utime(path, (past, past))
        result = defs.get_sensor_def("new_batch_sensor")(context)
        (request,) = result.run_requests  # both, in one run
        assert (request.partition_key_range.start, request.partition_key_range.end) == (a, b)


def test_a_missing_or_rewritten_table_file_is_damage_not_no_rows(raw, tmp_path, capsys):
    a, _ = _batches(raw)
    assert _run(raw, tmp_path, capsys)[0] == 0
    published = _sft(tmp_path)
    tables = tmp_path / "curated" / "tables"
    (tables / "trajectories" / f"batch={a}" / "data.parquet").unlink()
    failures = _launch_refresh(raw, tmp_path)  # the UI's path: the publish steps refuse, naming the batch
    assert len(failures) == 4 and f"batch(es) {a} (its table trajectories is missing)" in failures[0]
    status, out = _run(raw, tmp_path, capsys)  # the CLI redoes the batch, and publishes what it did before
    assert status == 0 and f"batch {a}: up to date" not in out and _sft(tmp_path) == published
    # A table rewritten outside its batch run (a step re-run alone, a run that failed half-way).
    evidence = tables / "evidence" / f"batch={a}" / "data.parquet"
    pl.read_parquet(evidence).head(1).write_parquet(evidence)
    failures = _launch_refresh(raw, tmp_path)
    assert len(failures) == 4 and f"batch(es) {a} (its table evidence was altered since its run)" in failures[0]
    assert _run(raw, tmp_path, capsys)[0] == 0 and _sft(tmp_path) == published


def test_batches_processed_with_other_settings_are_redone_before_publication(raw, tmp_path, capsys):
    a, b = _batches(raw)
    assert _run(raw, tmp_path, capsys, "--batch", a, "--set", "max_observation_chars=500")[1].count(": ok") >= 1
    failures = _launch_refresh(raw, tmp_path)  # default settings: a was processed with others
    assert f"{a} (it was processed with other settings or code)" in failures[0]
    status, out = _run(raw, tmp_path, capsys)
    assert status == 0 and f"batch {a}: up to date" not in out
    version = (tmp_path / "curated" / "published" / "sft_dataset" / "CURRENT").read_text()
    card = orjson.loads((tmp_path / "curated" / "published" / "sft_dataset" / version / "card.json").read_bytes())
    assert [x["batch"] for x in card["batches"]] == [a, b] and len({x["settings"] for x in card["batches"]}) == 1


def test_a_published_version_that_lost_a_file_is_republished(raw, tmp_path, capsys):
    assert _run(raw, tmp_path, capsys)[0] == 0
    published = _sft(tmp_path)
    folder = tmp_path / "curated" / "published" / "sft_dataset"
    damaged = (folder / "CURRENT").read_text()
    (folder / damaged / "validation.parquet").unlink()
    assert _run(raw, tmp_path, capsys)[0] == 0
    current = (folder / "CURRENT").read_text()
    assert current != damaged and current.split("-")[1] == damaged.split("-")[1]  # the same content, whole again
    assert _sft(tmp_path) == published


def test_a_batch_dropped_is_published_without(raw, tmp_path, capsys):
    a, b = _batches(raw)
    assert _run(raw, tmp_path, capsys)[0] == 0
    everything = _sft(tmp_path)
    root = str(tmp_path / "curated")
    assert main(["drop", "nope", "--data-root", root]) == 2
    assert main(["drop", b, "--data-root", root]) == 0
    shutil.move(raw / b, tmp_path / "aside")
    assert _run(raw, tmp_path, capsys, "--set", "max_shrink=1")[0] == 0
    kept = _sft(tmp_path)
    assert kept and set(kept) < set(everything) and batch_state.processed_batches(root) == [a]


def test_data_roots_and_instances_this_code_cannot_read_are_refused_in_one_line(raw, tmp_path, capsys):
    assert _run(raw, tmp_path, capsys)[0] == 0
    state = tmp_path / "curated" / "state"
    # An earlier release's root: no FORMAT, batches marked done under state/batches. Read, migrated once, redone.
    (state / "FORMAT").unlink()
    shutil.rmtree(state / "manifests")
    (state / "batches").mkdir()
    (state / "batches" / "0123456789abcdef.json").write_text('{"batch": "x", "fingerprint": "f"}')
    status, out = _run(raw, tmp_path, capsys)
    assert status == 0 and "written by an earlier release: its batches are redone once" in out
    assert (state / "FORMAT").read_text() == "2\n" and not (state / "batches").exists()
    for written, message in (("7\n", "was written by a newer cowork-curate (format 7"), ("??", "not a format number")):
        (state / "FORMAT").write_text(written)
        status, out = _run(raw, tmp_path, capsys)
        assert status == 1 and len(out.strip().splitlines()) == 1 and message in out
    (state / "FORMAT").write_text("2\n")
    (tmp_path / "home" / "history" / "runs.db").write_bytes(b"not a database" * 100)
    status, out = _run(raw, tmp_path, capsys)
    assert status == 1 and len(out.strip().splitlines()) == 1
    assert "cannot be read (file is not a database): move that folder aside" in out


def test_a_batch_run_that_fails_half_way_leaves_the_last_good_tables(raw, tmp_path, capsys, monkeypatch):
    from cowork_assets.curation import assets as curation_assets

    a, _ = _batches(raw)
    assert _run(raw, tmp_path, capsys)[0] == 0
    tables = tmp_path / "curated" / "tables"
    before = {p: p.read_bytes() for p in tables.glob(f"*/batch={a}/data.parquet")}
    manifest = (tmp_path / "curated" / "state" / "manifests" / f"{a}.json").read_bytes()
    quarantined = _rows(tmp_path, "quarantine", a)
    with (raw / a / "part-000.jsonl").open("a") as fh:
        fh.write("appended, not JSON\n")

    def fails(*args, **kwargs):
        raise RuntimeError("curation failed half-way")

    monkeypatch.setattr(curation_assets, "curate_chunk", fails)  # after ingest wrote the batch's new tables
    status, out = _run(raw, tmp_path, capsys)
    assert status == 1 and f"FAILED {a}: curation: RuntimeError: curation failed half-way" in out
    assert {p: p.read_bytes() for p in tables.glob(f"*/batch={a}/data.parquet")} == before  # nothing replaced
    assert (tmp_path / "curated" / "state" / "manifests" / f"{a}.json").read_bytes() == manifest
    assert list((tmp_path / "curated" / "in-progress" / a).glob("*/trajectories/data.parquet"))  # aside
    monkeypatch.undo()
    status, out = _run(raw, tmp_path, capsys)
    assert status == 0 and _rows(tmp_path, "quarantine", a) == quarantined + 1
    assert not (tmp_path / "curated" / "in-progress" / a).exists()
