"""Benchmark holdouts: lists in each shape, the near-duplicate rule, the training side, and the shared tau2 runs
(0 test tasks in any published split)."""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest

from cowork_assets.selection.holdout import HoldoutError, held_out, load, training_side
from tests.conftest import SHARED

TAU2_SPLITS = SHARED / "benchmarks" / "tau2"
REAL = SHARED / "realdata"


def test_the_shipped_tau2_splits_hold_out_their_test_tasks_under_the_tau2_readers_ids():
    lists = load(["tau2"])
    assert lists.group_by("side").len().sort("side").rows() == [("test", 60), ("train", 104)]
    test = set(lists.filter(pl.col("side") == "test")["task_id"])
    assert {"tau2-airline-2", "tau2-airline-6", "tau2-retail-5", "tau2-retail-9"} <= test
    assert "tau2-airline-0" in set(training_side(lists)) and "tau2-airline-0" not in test


def test_lists_of_ids_name_their_benchmark_and_id_scheme(tmp_path):
    (tmp_path / "verified.txt").write_text(
        "# benchmark: swe-bench-verified\nastropy__astropy-12907\n\n# c\ndjango__django-11099\n"
    )
    (tmp_path / "mine.json").write_text(
        json.dumps({"benchmark": "internal", "task_id": "tasks-{id}", "ids": [7, {"id": "9", "text": "do x"}]})
    )
    (tmp_path / "lite.jsonl").write_text(
        json.dumps({"instance_id": "sympy__sympy-20590", "problem_statement": "Symbol instances have __dict__"}) + "\n"
    )
    split = tmp_path / "domains" / "mock"
    split.mkdir(parents=True)
    (split / "split_tasks.json").write_text(json.dumps({"train": ["1"], "test": ["2"], "train+test": ["1", "2"]}))
    lists = load([str(tmp_path)])
    assert sorted(lists.select("benchmark", "task_id", "side").rows()) == [
        ("internal", "tasks-7", "test"),
        ("internal", "tasks-9", "test"),
        ("lite", "sympy__sympy-20590", "test"),
        ("swe-bench-verified", "astropy__astropy-12907", "test"),
        ("swe-bench-verified", "django__django-11099", "test"),
        ("tau2", "tau2-mock-1", "train"),
        ("tau2", "tau2-mock-2", "test"),
    ]
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(HoldoutError, match="broken.json cannot be read"):
        load([str(tmp_path)])
    with pytest.raises(HoldoutError, match="neither a shipped list"):
        load([str(tmp_path / "nowhere")])


def test_a_held_out_task_under_another_id_is_held_out_by_its_text():
    text = "You want to return the water bottle and the desk lamp from order W123 and exchange the keyboard for one "
    text += "with clicky switches and RGB backlight, paying the difference with your gift card"
    tasks = pl.DataFrame(
        {
            "task_id": ["tau2-retail-5", "renamed-5", "copy-5", "other", "short"],
            "request": [text, "Hi. " + text.upper() + " please.", text, "Book a flight from NYC to LAX " * 5, "hi"],
        }
    )
    lists = pl.DataFrame(
        {"benchmark": ["tau2"], "task_id": ["tau2-retail-5"], "side": ["test"], "text": [None], "source": ["s"]}
    )
    found = held_out(tasks, lists, overlap=0.5)
    assert found.select("task_id", "reason").rows() == [
        ("copy-5", "near_duplicate"),
        ("renamed-5", "near_duplicate"),
        ("tau2-retail-5", "listed"),
    ]
    share, rest = found["detail"][1].split(" ", 1)
    assert float(share) > 0.9 and rest == "of its word 13-grams are in held-out task tau2-retail-5's text"
    assert held_out(tasks, lists, overlap=1.0)["task_id"].to_list() == ["copy-5", "tau2-retail-5"]


@pytest.mark.skipif(not (REAL / "tau2").is_dir(), reason="../shared/realdata is absent")
def test_no_official_tau2_test_task_reaches_a_published_split(tmp_path):
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    # all 50 airline tasks (20 of them official test tasks); the retail file's 40 are all test tasks
    for name in ("judgeviewer_azure_gpt4o_airline.json", "sierra_gpt41_retail_1trial.json"):
        (tmp_path / "raw" / "tau2").mkdir(parents=True, exist_ok=True)
        shutil.copy(REAL / "tau2" / name, tmp_path / "raw" / "tau2" / name)
    settings = CurateSettings(raw_root=str(tmp_path / "raw"), data_root=str(tmp_path / "curated"))
    assert materialize_all(settings, ensure_instance(tmp_path / "home"), echo=lambda _: None).failed == {}
    official = set()
    for domain in ("airline", "retail"):
        split = json.loads((TAU2_SPLITS / f"{domain}_split_tasks.json").read_text())
        official |= {f"tau2-{domain}-{i}" for i in split["test"]}
    published = tmp_path / "curated" / "published"
    sft = pl.read_parquet(published / "sft_dataset" / "current" / "*.parquet")
    rl = pl.read_parquet(published / "rl_tasks" / "current" / "*.parquet")
    assert sft.height > 0 and rl.height > 0
    assert not official & set(sft["task_id"]) and not official & set(rl["extra_info"].struct.field("task_id"))
    runs = pl.read_parquet(tmp_path / "curated" / "tables" / "trajectories" / "batch=*" / "data.parquet")
    excluded = pl.read_parquet(tmp_path / "curated" / "tables" / "exclusions" / "bucket=*" / "data.parquet")
    held = excluded.filter(pl.col("criterion") == "holdout", pl.col("dataset") == "sft")
    assert set(held["trajectory_id"]) == set(runs.filter(pl.col("task_id").is_in(list(official)))["trajectory_id"])
    train_side = set(training_side(load(["tau2"])))
    assert set(sft.filter(pl.col("task_id").is_in(list(train_side)))["split"]) <= {"train"}
    card = json.loads((published / "sft_dataset" / "current" / "card.json").read_text())
    assert {"step": "after holdout", "remaining": runs.height - held.height} in card["funnel"]
    assert any(r["criterion"] == "holdout" for r in card["drop_reasons"])
