"""Preference pairs from graded runs (`selection/preference.py`, `datasets/preference.py`): a passing and a failing run
of one task and prompt, the chosen graded above the rejected by the margin; a run whose failure truncation may have
caused is never a rejected side; every run not in a pair says why; TRL's DPO and KTO trainers take the files."""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest

from cowork_assets.selection.preference import pair_runs, sides
from tests.conftest import SHARED

RUN = {"batch": pl.String, "trajectory_id": pl.String}
GUARDED = {**RUN, "criterion": pl.String, "reason": pl.String, "detail": pl.String}


def _runs(*rows) -> pl.DataFrame:
    return pl.DataFrame(
        [("b", tid, "t1", 7, passed, score, chars) for tid, passed, score, chars in rows],
        schema={
            **RUN,
            "task_id": pl.String,
            "prompt_key": pl.UInt64,
            "grade_passed": pl.Boolean,
            "grade_score": pl.Float64,
            "chars": pl.Int64,
        },
        orient="row",
    )


def test_pairs_best_chosen_with_worst_rejected_within_the_margin_and_the_cap():
    runs = _runs(
        ("pass-short", True, 1.0, 100),
        ("pass-long", True, 1.0, 900),
        ("pass-third", True, 1.0, 950),
        ("fail-zero", False, 0.0, 500),
        ("fail-half", False, 0.6, 400),
        ("fail-other", False, 0.0, 800),
    )
    sided = sides(runs, pl.DataFrame(schema=GUARDED), pl.DataFrame(schema=RUN), pl.DataFrame(schema=RUN))
    pairs, unpaired = pair_runs(sided, margin=0.5, cap=1)
    assert pairs.select("chosen_id", "rejected_id", "margin").rows() == [("pass-short", "fail-zero", 1.0)]
    why = dict(unpaired.select("trajectory_id", "criterion").iter_rows())
    assert why == {"pass-long": "cap", "fail-other": "cap", "pass-third": "pairing", "fail-half": "pairing"}
    pairs, unpaired = pair_runs(sided, margin=0.5, cap=4)
    assert pairs["chosen_id"].to_list() == ["pass-short", "pass-long"]  # the third's counterpart is 0.4 below it
    assert dict(unpaired.select("trajectory_id", "criterion").iter_rows()) == {
        "pass-third": "pairing",
        "fail-half": "pairing",
    }


def test_a_failure_truncation_may_have_caused_is_never_a_rejected_side():
    """A failing run that lost evidence to truncation may have failed for that: it is out, with its reason; so are
    an ungraded run, one whose grade cannot be trusted, a duplicate, and one an SFT guard stops."""
    runs = _runs(
        ("pass", True, 1.0, 100),
        ("fail-truncated", False, 0.0, 100),
        ("fail-untrusted", False, 0.0, 100),
        ("ungraded", None, None, 100),
        ("fail-duplicate", False, 0.0, 100),
        ("fail-held-out", False, 0.0, 100),
    )
    guarded = pl.DataFrame(
        [
            ("b", "fail-truncated", "evidence", "lost evidence to truncation", "2 at-risk value(s) no longer shown"),
            ("b", "fail-held-out", "holdout", "held-out benchmark task (listed)", "test task"),
        ],
        schema=GUARDED,
        orient="row",
    )
    untrusted = pl.DataFrame([("b", "fail-untrusted")], schema=RUN, orient="row")
    duplicates = pl.DataFrame([("b", "fail-duplicate")], schema=RUN, orient="row")
    pairs, unpaired = pair_runs(sides(runs, guarded, untrusted, duplicates), margin=0.5, cap=4)
    assert pairs.height == 0
    why = {t: (c, r) for t, c, r in unpaired.select("trajectory_id", "criterion", "reason").iter_rows()}
    assert why == {
        "pass": ("pairing", "no counterpart"),
        "fail-truncated": ("evidence", "a failure truncation may have caused"),
        "fail-untrusted": ("grade", "grade untrusted"),
        "ungraded": ("grade", "not graded"),
        "fail-duplicate": ("dedup", "duplicate"),
        "fail-held-out": ("holdout", "held-out benchmark task (listed)"),
    }


def _published(settings, dataset: str) -> pl.DataFrame:
    return pl.read_parquet(settings.local_root / "published" / dataset / "current" / "*.parquet")


def test_the_default_data_publishes_pairs_of_one_task_and_prompt_and_accounts_for_every_run(pipeline):
    settings, _, _ = pipeline
    pairs = _published(settings, "preference_pairs")
    assert pairs.height > 30 and pairs["pair_id"].is_unique().all()
    assert (pairs["chosen_score"] - pairs["rejected_score"] >= settings.preference_margin).all()
    assert (pairs["chosen_trajectory_id"] != pairs["rejected_trajectory_id"]).all()
    runs = pl.read_parquet(settings.local_root / "tables" / "trajectories" / "*" / "*.parquet")
    tasks = dict(runs.select("trajectory_id", "task_id").iter_rows())
    for row in pairs.iter_rows(named=True):
        assert tasks[row["chosen_trajectory_id"]] == tasks[row["rejected_trajectory_id"]] == row["task_id"]
        roles = [m["role"] for m in row["prompt"]]
        assert "user" in roles and row["chosen"][-1]["role"] == row["rejected"][-1]["role"] == "assistant"
        assert row["chosen"][0] != row["rejected"][0]  # the prompt is all they share from the start
        assert row["rejected_reason"].startswith(("failed: ", "did not pass"))
    exclusions = pl.read_parquet(settings.local_root / "tables" / "exclusions" / "*" / "*.parquet")
    unpaired = exclusions.filter(pl.col("dataset") == "preference")
    paired = set(pairs["chosen_trajectory_id"]) | set(pairs["rejected_trajectory_id"])
    assert paired.isdisjoint(unpaired["trajectory_id"]) and paired | set(unpaired["trajectory_id"]) == set(
        runs["trajectory_id"]
    )
    card = json.loads((settings.local_root / "published" / "preference_pairs" / "current" / "card.json").read_text())
    steps = {f["step"]: f["remaining"] for f in card["funnel"]}
    assert steps["after cap"] == len(paired) and steps["published"] == pairs.height
    by_category = {p["category"]: p["pairs"] for p in card["pairs"]}
    assert by_category == dict(pairs.group_by("category").len().iter_rows())
    assert "## Pairs" in (settings.local_root / "published" / "preference_pairs" / "current" / "card.md").read_text()
    # A pair traces back to both raw lines, the chosen first.
    from cowork_assets.warehouse.trace import trace

    pair = pairs.row(0, named=True)
    lines = trace(settings.warehouse_path, settings.root, pair["pair_id"], settings.raw_path)
    assert lines[:4] == [f"preference pair {pair['pair_id']}", "", "chosen:", pair["chosen_trajectory_id"]]
    raw = [line for line in lines if line.startswith("  raw ")]
    assert [r.split()[1] for r in raw] == [
        f"{pair['chosen_raw_file']}:{pair['chosen_raw_record']}",
        f"{pair['rejected_raw_file']}:{pair['rejected_raw_record']}",
    ]


def test_trls_dpo_and_kto_trainers_take_the_pairs(pipeline, tmp_path):
    from cowork_assets.datasets.export import kto
    from tests.datasets.test_trainers import _run

    settings, _, _ = pipeline
    assert kto(settings.root, tmp_path / "kto.jsonl", split="train") > 0
    facts = _run("trl_dpo.py", settings.root, tmp_path, facts="dpo_facts.json")
    train = _published(settings, "preference_pairs").filter(pl.col("split") == "train")
    assert facts["rows"]["train"] == facts["prepared"] == train.height and facts["empty_sides"] == []
    assert len(facts["dpo_losses"]) == 2 and all(loss > 0 for loss in facts["dpo_losses"])
    assert facts["kto_labels"] == [False, True] and len(facts["kto_losses"]) == 1
    assert facts["qwen3_failures"] == []


@pytest.mark.skipif(not (SHARED / "realdata" / "tau_bench").is_dir(), reason="../shared/realdata is absent")
def test_real_runs_of_one_task_pair_up_where_they_saw_one_prompt(tmp_path):
    """tau-bench's gpt-4o airline runs: four trials of each task, some passing, some not. A trial's simulated user
    opens in its own words, so most trials saw another prompt: those pair only where the opening was the same."""
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    (tmp_path / "raw" / "tau").mkdir(parents=True)
    for name in ("gpt-4o-airline.json", "tools_airline.json"):
        shutil.copy(SHARED / "realdata" / "tau_bench" / name, tmp_path / "raw" / "tau" / name)
    settings = CurateSettings(raw_root=str(tmp_path / "raw"), data_root=str(tmp_path / "curated"))
    assert materialize_all(settings, ensure_instance(tmp_path / "home"), echo=lambda _: None).failed == {}
    pairs = _published(settings, "preference_pairs")
    assert pairs.height >= 1 and (pairs["margin"] >= 0.5).all()
    for row in pairs.iter_rows(named=True):
        assert [m["role"] for m in row["prompt"]][:2] == ["system", "user"]
    exclusions = pl.read_parquet(settings.local_root / "tables" / "exclusions" / "*" / "*.parquet")
    reasons = set(exclusions.filter(pl.col("dataset") == "preference", pl.col("criterion") == "pairing")["reason"])
    assert "another prompt" in reasons


def test_a_pair_splits_where_its_runs_first_differ_field_by_field():
    from cowork_assets.datasets.preference import MESSAGES, split_at_shared_prefix

    def m(role: str, content: str, calls: list | None = None) -> dict:
        return {"role": role, "content": content, "reasoning_content": None, "tool_calls": calls, "tool_call_id": None}

    call = lambda args: [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": args}}]  # noqa: E731
    system, ask = m("system", "be brief"), m("user", "fix it")
    chosen = [
        [system, ask, m("assistant", "", call("{}")), m("tool", "ok")],
        [system, ask, m("assistant", "done")],
        [system, ask],
        [system, ask, m("assistant", "same")],
    ]
    rejected = [
        [system, ask, m("assistant", "", call('{"x":1}')), m("tool", "ok")],  # differs in a call's arguments only
        [system, m("user", "fix it!"), m("assistant", "done")],
        [system, ask, m("assistant", "more")],
        [system, ask, m("assistant", "same")],  # the same run twice: all of it is the prompt
    ]
    out = split_at_shared_prefix(pl.Series(chosen, dtype=MESSAGES), pl.Series(rejected, dtype=MESSAGES))
    assert out["prompt"].list.len().to_list() == [2, 1, 2, 3]
    assert out["chosen"].list.len().to_list() == [2, 2, 0, 0]
    assert out["rejected"].list.len().to_list() == [2, 2, 1, 0]
    assert out["rejected"][0].to_list()[0]["tool_calls"][0]["function"]["arguments"] == '{"x":1}'
