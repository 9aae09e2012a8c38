"""Benchmark holdouts: lists in each shape, ids normalised on both sides, decontamination by a test task's own text
(containment over the benchmark side, harness templates ignored), the training side, and the shared real runs (0
tau2 or SWE-bench test tasks in any published split)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from cowork_assets.holdouts import HoldoutError, load
from cowork_assets.selection.holdout import held_out, training_side
from tests.conftest import SHARED

TAU2_SPLITS = SHARED / "benchmarks" / "tau2"
REAL = SHARED / "realdata"


def test_the_shipped_tau2_splits_hold_out_their_test_tasks_under_the_tau2_readers_ids():
    lists = load(["tau2"])
    assert lists.group_by("side").len().sort("side").rows() == [("test", 60), ("train", 104)]
    test = set(lists.filter(pl.col("side") == "test")["task_id"])
    assert {"tau2-airline-2", "tau2-airline-6", "tau2-retail-5", "tau2-retail-9"} <= test
    assert "tau2-airline-0" in set(training_side(lists)) and "tau2-airline-0" not in test
    assert lists["text"].null_count() == 0  # every task's own text: a renamed copy is caught without its original
    retail_5 = lists.filter(pl.col("task_id") == "tau2-retail-5")["text"][0]
    assert retail_5.startswith("You want to exchange the water bottle and the desk lamp.")


def test_the_shipped_swebench_lists_hold_out_verified_and_lite_by_default():
    from cowork_assets.settings import Settings

    assert Settings().holdout == ["tau2", "swebench"]
    lists = load(["swebench"])
    by = lists.group_by("benchmark").len().sort("benchmark").rows()
    assert by == [("swebench-lite", 300), ("swebench-verified", 407)]  # 93 Lite instances are in Verified too
    assert {"astropy__astropy-12907", "psf__requests-1142", "sympy__sympy-24909"} <= set(lists["task_id"])
    assert set(lists["side"]) == {"test"}


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
    # Read once while the files stay as they are: a list edited, or added, is read anew.
    assert load([str(tmp_path)]) is load([str(tmp_path)])
    (tmp_path / "mine.json").write_text(json.dumps({"benchmark": "internal", "task_id": "tasks-{id}", "ids": [8]}))
    assert {"tasks-8"} == set(load([str(tmp_path)]).filter(pl.col("benchmark") == "internal")["task_id"])
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(HoldoutError, match="broken.json cannot be read"):
        load([str(tmp_path)])
    with pytest.raises(HoldoutError, match="neither a shipped list"):
        load([str(tmp_path / "nowhere")])


HARNESS = (  # a harness's instructions around every task: never a benchmark's text
    "You are a helpful assistant that can interact with a computer shell to solve programming tasks. "
    "Every response must contain exactly one bash code block with one command. Do not ask questions. "
    "When you are done, run echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT and nothing else after it. "
) * 6


def _problem(topic: str) -> str:
    return (
        f"The {topic} module raises a TypeError when the configuration file lists two handlers with the same name "
        f"and one of them is disabled, because the loader in {topic} merges the entries before it filters them, "
        f"so the disabled handler overwrites the enabled one and the {topic} service never starts."
    )


def _lists(*rows) -> pl.DataFrame:
    return pl.DataFrame(
        [(b, t, "test", text, "s") for b, t, text in rows],
        schema=["benchmark", "task_id", "side", "text", "source"],
        orient="row",
    )


def test_ids_are_normalised_on_both_sides():
    tasks = pl.DataFrame({"task_id": ["tau2-airline- 5", "tau2-airline-9 ", "tau2-airline-018", "tau2-airline-50"]})
    tasks = tasks.with_columns(request=pl.lit("hi"))
    lists = _lists(
        ("tau2", "tau2-airline-5", None), ("tau2", "tau2-airline-9", None), ("tau2", "tau2-airline-18", None)
    )
    found = held_out(tasks, lists, overlap=0.5)
    assert found.select("task_id", "reason").rows() == [
        ("tau2-airline- 5", "listed"),
        ("tau2-airline-018", "listed"),
        ("tau2-airline-9 ", "listed"),
    ]


def test_a_test_task_inside_a_harness_request_is_caught_and_other_tasks_of_the_harness_are_kept():
    """Containment over the benchmark side: the list's own text, found whole in a long harness request."""
    scenario = _problem("scheduler")
    tasks = pl.DataFrame(
        {
            "task_id": ["tau2-retail-5", "cand-5", "other-1", "other-2"],
            "request": [
                scenario,
                HARNESS + scenario.upper(),
                HARNESS + _problem("mailer"),
                HARNESS + _problem("cache"),
            ],
        }
    )
    found = held_out(tasks, _lists(("tau2", "tau2-retail-5", scenario)), overlap=0.5)
    assert found.select("task_id", "reason").rows() == [("cand-5", "contains_test_text"), ("tau2-retail-5", "listed")]
    detail = found["detail"][0]
    assert detail.startswith("1.00 of test task tau2-retail-5's 13-grams are in its request, e.g. \"the scheduler")


def test_a_renamed_copy_is_caught_by_its_original_in_the_corpus_without_the_harness_template():
    """No list text (SWE-bench ids only): the listed run's request is the text, less the 13-grams the harness's other
    requests share, so runs of the harness on other tasks are kept."""
    tasks = pl.DataFrame(
        {
            "task_id": ["astropy__astropy-12907", "cand-1", *(f"internal-{i}" for i in range(4))],
            "request": [
                HARNESS + _problem("modeling"),
                HARNESS + _problem("modeling"),
                *(HARNESS + _problem(t) for t in ("io", "units", "wcs", "table")),
            ],
        }
    )
    lists = _lists(("swebench-verified", "astropy__astropy-12907", None))
    found = held_out(tasks, lists, overlap=0.5)
    assert found.select("task_id", "benchmark", "reason").rows() == [
        ("astropy__astropy-12907", "swebench-verified", "listed"),
        ("cand-1", "swebench-verified", "contains_test_text"),
    ]
    assert held_out(tasks, lists, overlap=1.0)["task_id"].to_list() == ["astropy__astropy-12907", "cand-1"]


def test_the_corpus_held_out_tasks_are_found_once_while_the_corpus_and_the_lists_are_unchanged(tmp_path, monkeypatch):
    """Every dataset of a refresh asks for the corpus's held-out tasks: they are found once, and again when a batch
    is redone (its manifest changes) or a list file changes."""
    from cowork_assets.orchestration.verdict import corpus_version
    from cowork_assets.selection import holdout
    from cowork_assets.settings import Settings
    from cowork_assets.store import storage
    from cowork_assets.store.batch_state import STATE
    from cowork_assets.store.registry import TABLES

    root, found = str(tmp_path / "curated"), []
    monkeypatch.setattr(holdout, "held_out", lambda *args: found.append(args[0]) or held_out(*args))
    listed = tmp_path / "benchmark.txt"
    listed.write_text("# benchmark: bench\nbench-1\n")

    def batch(task_ids: list[str], raw: str) -> None:
        packages = TABLES["task_packages"].committed_file(root, "b1")
        Path(packages).parent.mkdir(parents=True, exist_ok=True)
        pl.DataFrame({"task_id": task_ids, "request": ["r"] * len(task_ids)}).write_parquet(packages)
        storage.write_text_atomic(f"{root}/{STATE}/manifests/b1.json", json.dumps({"raw": raw, "settings": "s"}))

    def ask() -> list[str]:
        corpus = corpus_version(Settings(raw_root=str(tmp_path), data_root=root))
        return holdout.corpus_held_out(root, [str(listed)], 0.5, corpus)["task_id"].to_list()

    batch(["bench-1", "bench-2", "x"], raw="r1")
    assert [ask(), ask(), ask()] == [["bench-1"]] * 3 and len(found) == 1
    batch(["bench-2", "x"], raw="r2")  # the batch redone from other raw files
    assert ask() == [] and len(found) == 2
    listed.write_text("# benchmark: bench\nbench-1\nbench-2\n")  # a longer list: a new size
    assert [ask(), ask()] == [["bench-2"]] * 2 and len(found) == 3


@pytest.mark.skipif(not (REAL / "round4").is_dir(), reason="../shared/realdata is absent")
def test_no_benchmark_test_task_reaches_a_published_split_under_its_id_or_another(tmp_path):
    """The shared real runs with the default lists: tau2's test tasks (and renamed copies of them, ids `cand-N`), and
    the mini-swe-agent runs on SWE-bench Verified and Lite instances, are held out of every dataset."""
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    # all 50 airline tasks (20 of them official test tasks); the retail file's 40 are all test tasks
    (tmp_path / "raw" / "tau2").mkdir(parents=True)
    for name in ("judgeviewer_azure_gpt4o_airline.json", "sierra_gpt41_retail_1trial.json"):
        shutil.copy(REAL / "tau2" / name, tmp_path / "raw" / "tau2" / name)
    renamed = json.loads((REAL / "tau2" / "sierra_gpt41_retail_1trial.json").read_text())
    for item in (*renamed["tasks"], *renamed["simulations"]):
        key = "id" if "user_scenario" in item else "task_id"
        item[key] = f"cand-{item[key]}"
    for sim in renamed["simulations"]:
        sim["id"] = f"renamed-{sim['id']}"
    (tmp_path / "raw" / "renamed").mkdir()
    (tmp_path / "raw" / "renamed" / "retail.json").write_text(json.dumps(renamed))
    shutil.copytree(REAL / "round4" / "mini_swe_agent_v2", tmp_path / "raw" / "mini")
    settings = CurateSettings(raw_root=str(tmp_path / "raw"), data_root=str(tmp_path / "curated"), accept_ungraded=True)
    assert materialize_all(settings, ensure_instance(tmp_path / "home"), echo=lambda _: None).failed == {}
    official = set(load(["tau2", "swebench"]).filter(pl.col("side") == "test")["task_id"])
    published = tmp_path / "curated" / "published"
    sft = pl.read_parquet(published / "sft_dataset" / "current" / "*.parquet")
    rl = pl.read_parquet(published / "rl_tasks" / "current" / "*.parquet")
    assert sft.height > 0 and rl.height > 0
    assert not official & set(sft["task_id"]) and not official & set(rl["extra_info"].struct.field("task_id"))
    assert not any(t.startswith("tau2-retail-cand-") for t in sft["task_id"])  # renamed copies: held out by text
    runs = pl.read_parquet(tmp_path / "curated" / "tables" / "trajectories" / "batch=*" / "data.parquet")
    excluded = pl.read_parquet(tmp_path / "curated" / "tables" / "exclusions" / "bucket=*" / "data.parquet")
    held = excluded.filter(pl.col("criterion") == "holdout", pl.col("dataset") == "sft")
    by_id = runs.filter(pl.col("task_id").is_in(list(official)))
    # 12 of the 13 shared mini-swe-agent 2.x runs are on SWE-bench Verified or Lite instances (not marshmallow-1343)
    assert by_id.filter(pl.col("batch") == "mini").height == 12
    by_text = runs.filter(pl.col("batch") == "renamed")
    assert set(held["trajectory_id"]) == set(by_id["trajectory_id"]) | set(by_text["trajectory_id"])
    copies = held.filter(pl.col("batch") == "renamed")
    assert copies["detail"].str.contains(r"^1\.00 of test task tau2-retail-\d+'s 13-grams are in its request").all()
    train_side = set(training_side(load(["tau2"])))
    assert set(sft.filter(pl.col("task_id").is_in(list(train_side)))["split"]) <= {"train"}
    card = json.loads((published / "sft_dataset" / "current" / "card.json").read_text())
    assert {"step": "after holdout", "remaining": runs.height - held.height} in card["funnel"]
    checked = {c["benchmark"]: c for c in card["decontamination"]["checked"]}
    assert checked["tau2"]["runs_held_out_by_text"] == by_text.height
    assert checked["swebench-lite"]["runs_held_out_by_id"] + checked["swebench-verified"]["runs_held_out_by_id"] == 12
    assert "tau-bench" in card["decontamination"]["not_checked"]
    assert "## Benchmarks held out" in (published / "sft_dataset" / "current" / "card.md").read_text()


@pytest.mark.skipif(not (REAL / "tau2").is_dir(), reason="../shared/realdata is absent")
def test_renamed_copies_of_real_tau2_test_tasks_are_caught_without_their_originals():
    """The shared runs' task texts are an older tau2 release's (some sentences since added or changed): every
    renamed copy still contains at least the default share of its test task's text; no training task is held out."""
    from cowork_assets.ingest.formats.tau2 import SCENARIO_PARTS
    from cowork_assets.settings import Settings

    rows = []
    for name, domain in (
        ("sierra_gpt41_retail_1trial.json", "retail"),
        ("judgeviewer_azure_gpt4o_airline.json", "airline"),
    ):
        for task in json.loads((REAL / "tau2" / name).read_text())["tasks"]:
            scenario = task["user_scenario"]["instructions"]
            request = "\n".join(str(scenario[k]) for k in SCENARIO_PARTS if scenario.get(k))
            rows.append((f"cand-{domain}-{task['id']}", request, f"tau2-{domain}-{task['id']}"))
    tasks = pl.DataFrame(rows, schema=["task_id", "request", "original"], orient="row")
    lists = load(["tau2"])
    found = held_out(tasks.drop("original"), lists, overlap=Settings().holdout_overlap)
    test = set(lists.filter(pl.col("side") == "test")["task_id"])
    copies_of_test = set(tasks.filter(pl.col("original").is_in(list(test)))["task_id"])
    assert len(copies_of_test) == 60 and set(found["task_id"]) >= copies_of_test
    assert set(found["reason"]) == {"contains_test_text"}
