"""Damaged or older state is named in one line or read as it was written, never followed: a `CURRENT` that names
no version (a path out of the data root), a card an earlier release wrote, an export aimed into the data root, a
grade out of range."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest

from cowork_assets.synthetic.generate import generate
from cowork_cli.cli import main


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    """A small corpus run once; each test works on its own copy of the data root."""
    base = tmp_path_factory.mktemp("damage")
    generate(base / "raw", trajectories=40, batches=1, seed=5)
    args = ["run", "--raw-root", str(base / "raw"), "--data-root", str(base / "curated")]
    assert main([*args, "--dagster-home", str(base / "home")]) == 0
    return base


def _copy(published: Path, tmp_path: Path) -> Path:
    shutil.copytree(published / "curated", tmp_path / "curated", symlinks=True)
    return tmp_path / "curated"


def _run(published: Path, root: Path, tmp_path: Path, *more: str) -> int:
    args = ["run", "--raw-root", str(published / "raw"), "--data-root", str(root), "--dagster-home"]
    return main([*args, str(tmp_path / "home"), *more])


def test_a_current_pointer_that_names_no_version_is_refused_in_one_line_and_a_run_repairs_it(
    published, tmp_path, capsys
):
    root = _copy(published, tmp_path)
    outside = tmp_path / "evil"
    (outside / "x").mkdir(parents=True)
    (root / "published" / "sft_dataset" / "CURRENT").write_text("../../../evil/x")
    capsys.readouterr()
    assert main(["export", "--data-root", str(root), "--format", "jsonl", "--out", str(tmp_path / "o.jsonl")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "names '../../../evil/x', which is not a published version of sft_dataset" in err[0]
    assert not (tmp_path / "o.jsonl").exists()
    assert _run(published, root, tmp_path, "--force") == 0
    current = (root / "published" / "sft_dataset" / "CURRENT").read_text()
    assert current.startswith("v") and (root / "published" / "sft_dataset" / current).is_dir()
    assert main(["export", "--data-root", str(root), "--format", "jsonl", "--out", str(tmp_path / "o.jsonl")]) == 0


def test_a_card_an_earlier_release_wrote_is_read_and_the_next_publication_succeeds(published, tmp_path):
    root = _copy(published, tmp_path)
    version = (root / "published" / "sft_dataset" / "CURRENT").read_text()
    card_path = root / "published" / "sft_dataset" / version / "card.json"
    card = json.loads(card_path.read_text())
    # as the earlier release wrote it: `stage` where this one writes `step` and `criterion`, no later sections
    card["funnel"] = [{"stage": f["step"], "remaining": f["remaining"]} for f in card["funnel"]]
    card["drop_reasons"] = [
        {"stage": d["criterion"], "reason": d["reason"], "count": d["count"]} for d in card["drop_reasons"]
    ]
    for later in ("redactions", "budgets", "terminal_text", "token_lengths"):
        card.pop(later, None)
    card_path.write_bytes(orjson.dumps(card))
    assert _run(published, root, tmp_path, "--force", "--set", "max_per_task=3") == 0
    assert "## From raw to published" in (root / "published" / "CARD.md").read_text()


def test_an_export_into_the_data_root_is_refused(published, tmp_path, capsys):
    root = _copy(published, tmp_path)
    version = (root / "published" / "sft_dataset" / "CURRENT").read_text()
    target = root / "published" / "sft_dataset" / version / "train.parquet"
    before = target.read_bytes()
    capsys.readouterr()
    args = ["export", "--data-root", str(root), "--format", "jsonl", "--force", "--out", str(target)]
    assert main(args) == 2
    assert "is inside the data root" in capsys.readouterr().err and target.read_bytes() == before


def test_a_grade_out_of_range_is_quarantined_not_a_blocked_publication(tmp_path):
    from cowork_assets.ingest.batch import ingest_batch

    run = {
        "schema": "cowork.trajectory/v1",
        "trajectory_id": "t1",
        "task": {"task_id": "x", "category": "c", "request": "hi"},
        "teacher": {"model": "m", "role": "teacher"},
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        "grade": {"score": 5.0, "passed": True},
    }
    (tmp_path / "raw" / "b").mkdir(parents=True)
    (tmp_path / "raw" / "b" / "a.jsonl").write_bytes(orjson.dumps(run) + b"\n")
    report = ingest_batch(tmp_path / "raw", "b", str(tmp_path / "out"))
    assert (report.parsed, report.quarantined, dict(report.reasons)) == (0, 1, {"invalid_value": 1})


def test_a_dagster_home_inside_the_raw_root_is_refused(published, tmp_path, capsys):
    capsys.readouterr()
    args = ["run", "--raw-root", str(published / "raw"), "--data-root", str(tmp_path / "d")]
    assert main([*args, "--dagster-home", str(published / "raw" / "home")]) == 2
    assert "is inside the raw root" in capsys.readouterr().err and not (published / "raw" / "home").exists()


def test_a_version_that_lost_more_than_half_the_rows_is_refused_unless_asked(published, tmp_path, capsys):
    root = _copy(published, tmp_path)
    pointer = root / "published" / "sft_dataset" / "CURRENT"
    before = pointer.read_text()
    # Most samples over budget (which fails evidence_lost_to_budget: published anyway, to reach the shrink rule)
    tight = ["--force", "--set", "char_budget=1000", "--set", "budget_policy=drop"]
    tight += ["--set", "publish_despite_failed_checks=true"]
    capsys.readouterr()
    assert _run(published, root, tmp_path, *tight) == 1
    out = capsys.readouterr().out
    # the summary names the first dataset refused (the preference pairs shrink too: their runs were over budget)
    assert " not published: the candidate has " in out and "more than max_shrink=0.5 allows" in out
    assert pointer.read_text() == before
    _run(published, root, tmp_path, *tight, "--set", "max_shrink=1")  # (exit 1: the budget lost evidence)
    assert pointer.read_text() != before
    card = json.loads((root / "published" / "sft_dataset" / pointer.read_text() / "card.json").read_text())
    assert card["previous_rows"] > 2 * sum(card["rows"].values())
