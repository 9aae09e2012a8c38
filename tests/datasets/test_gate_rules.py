"""Every rule of the dataset gates fails on a candidate that breaks it: each Great Expectations expectation
(expectations/*.json) and each pandera rule of the dataset models. A valid published version is taken
from the default run and changed in one row, in one way, at a time."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from cowork_assets.datasets.gates import run_gate
from cowork_assets.datasets.suites import SuiteProcess
from cowork_assets.store import versions
from cowork_assets.store.storage import plain
from tests.conftest import ROOT

EXPECTATIONS = ROOT / "expectations"
FIRST = pl.int_range(pl.len()) == 0
HELD_OUT = "tau2-airline-2"  # a test task of tau2-bench's airline split
BUDGETS = {
    "char_budget": 40_000,
    "category_char_budgets": {"tiny_tasks": 10, "swe_agent": 262_144},
    "held_out": [HELD_OUT],
    "redact_secrets": True,
}
SECRET = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"  # the shape of a GitHub token
HELD = json.dumps({"db": {"password": "Xk9mP2qL7vR4tZ8w"}})  # JSON holding a credential under its key


def _first(column: str, value: pl.Expr) -> pl.Expr:
    return pl.when(FIRST).then(value).otherwise(pl.col(column)).alias(column)


def _field(column: str, **fields: pl.Expr) -> pl.Expr:
    return _first(column, pl.col(column).struct.with_fields(**fields))


def _messages(expr: pl.Expr) -> pl.Expr:
    return _first("messages", expr)


SECOND_AS_FIRST = {"duplicate": True}  # marker: the second row becomes a copy of the first

# dataset -> [(what is broken, the change, the failures it must cause: "expectation column" or "pandera: check column")]
BREAKS = {
    "sft_dataset": [
        (
            "duplicate sample",
            SECOND_AS_FIRST,
            {"expect_column_values_to_be_unique sample_id", "pandera: field_uniqueness sample_id"},
        ),
        (
            "null sample id",
            {"sample_id": pl.lit(None, pl.String)},
            {"expect_column_values_to_not_be_null sample_id", "pandera: not_nullable sample_id"},
        ),
        (
            "null task",
            {"task_id": pl.lit(None, pl.String)},
            {"expect_column_values_to_not_be_null task_id", "pandera: not_nullable task_id"},
        ),
        (
            "null trajectory",
            {"trajectory_id": pl.lit(None, pl.String)},
            {"expect_column_values_to_not_be_null trajectory_id", "pandera: not_nullable trajectory_id"},
        ),
        (
            "unknown split",
            {"split": pl.lit("test")},
            {"expect_column_values_to_be_in_set split", "pandera: isin(['train', 'validation']) split"},
        ),
        ("a task in both splits", "task_in_both_splits", {"expect_column_values_to_be_in_set task_splits"}),
        ("unknown role", "robot_role", {"expect_column_values_to_be_in_set n_bad_roles"}),
        ("ends on a tool message", "ends_on_tool", {"expect_column_values_to_be_in_set last_role"}),
        ("one message", "one_message", {"expect_column_values_to_be_between n_messages"}),
        ("over the budget", {"chars": pl.lit(40_001, pl.Int64)}, {"expect_column_values_to_be_between budget_excess"}),
        (
            "over its category's budget",
            {"chars": pl.lit(11, pl.Int64), "category": pl.lit("tiny_tasks")},
            {"expect_column_values_to_be_between budget_excess"},
        ),
        (
            "negative chars",
            {"chars": pl.lit(-1, pl.Int64)},
            {"expect_column_values_to_be_between chars", "pandera: greater_than_or_equal_to(0) chars"},
        ),
        ("negative tokens", {"tokens": pl.lit(-1, pl.Int64)}, {"pandera: greater_than_or_equal_to(0) tokens"}),
        ("score above 1", {"score": pl.lit(1.5)}, {"expect_column_values_to_be_between score"}),
        ("tools not JSON", {"tools": pl.lit("[not json")}, {"expect_column_values_to_be_in_set tools_is_json"}),
        ("line 0", {"raw_record": pl.lit(0, pl.Int64)}, {"pandera: greater_than_or_equal_to(1) raw_record"}),
        ("a held-out task", {"task_id": pl.lit(HELD_OUT)}, {"expect_column_values_to_be_in_set held_out"}),
        (
            "a secret in its text",
            {"tools": pl.lit(f'[{{"name": "x", "description": "use {SECRET}"}}]')},
            {"expect_column_values_to_be_in_set secrets"},
        ),
        ("a credential in a message's JSON", "secret_in_json_content", {"expect_column_values_to_be_in_set secrets"}),
    ],
    "rl_tasks": [
        ("duplicate task", {"extra_info": "copy task_id of row 2"}, {"expect_column_values_to_be_unique task_id"}),
        ("duplicate index", {"extra_info": "copy index of row 2"}, {"expect_column_values_to_be_unique index"}),
        (
            "null data source",
            {"data_source": pl.lit(None, pl.String)},
            {"expect_column_values_to_not_be_null data_source", "pandera: not_nullable data_source"},
        ),
        (
            "null ability",
            {"ability": pl.lit(None, pl.String)},
            {"expect_column_values_to_not_be_null ability", "pandera: not_nullable ability"},
        ),
        ("another reward style", "model_style", {"expect_column_values_to_be_in_set style"}),
        ("unknown split", "test_split", {"expect_column_values_to_be_in_set split"}),
        ("empty ground truth", "empty_ground_truth", {"expect_column_values_to_be_between ground_truth_chars"}),
        ("prompt without system", "user_only_prompt", {"expect_column_values_to_be_in_set n_prompt"}),
        ("pass rate above 1", "pass_rate_above_1", {"expect_column_values_to_be_between pass_rate"}),
        ("a held-out task", "held_out_task", {"expect_column_values_to_be_in_set held_out"}),
        ("a secret in its ground truth", "secret_ground_truth", {"expect_column_values_to_be_in_set secrets"}),
        (
            "a credential in a tool's state",
            {
                "extra_info": pl.col("extra_info").struct.with_fields(
                    tools_kwargs=pl.lit(json.dumps({"db": {"create_kwargs": json.loads(HELD)}}))
                )
            },
            {"expect_column_values_to_be_in_set secrets"},
        ),
    ],
    "rl_rollouts": [
        (
            "duplicate rollout",
            SECOND_AS_FIRST,
            {"expect_column_values_to_be_unique trajectory_id", "pandera: field_uniqueness trajectory_id"},
        ),
        (
            "null group",
            {"group_id": pl.lit(None, pl.String)},
            {"expect_column_values_to_not_be_null group_id", "pandera: not_nullable group_id"},
        ),
        (
            "score above 1",
            {"score": pl.lit(1.5)},
            {"expect_column_values_to_be_between score", "pandera: less_than_or_equal_to(1) score"},
        ),
        (
            "negative score",
            {"score": pl.lit(-0.5)},
            {"expect_column_values_to_be_between score", "pandera: greater_than_or_equal_to(0) score"},
        ),
        (
            "empty group",
            {"group_size": pl.lit(0, pl.Int64)},
            {"expect_column_values_to_be_between group_size", "pandera: greater_than_or_equal_to(1) group_size"},
        ),
        ("negative std", {"group_std": pl.lit(-1.0)}, {"pandera: greater_than_or_equal_to(0) group_std"}),
        (
            "null GRPO advantage",
            {"grpo_advantage": pl.lit(None, pl.Float64)},
            {"expect_column_values_to_not_be_null grpo_advantage", "pandera: not_nullable grpo_advantage"},
        ),
        (
            "null GDPO advantage",
            {"gdpo_advantage": pl.lit(None, pl.Float64)},
            {"expect_column_values_to_not_be_null gdpo_advantage", "pandera: not_nullable gdpo_advantage"},
        ),
        ("a held-out task", {"task_id": pl.lit(HELD_OUT)}, {"expect_column_values_to_be_in_set held_out"}),
    ],
}


def _break(dataset: str, frame: pl.DataFrame, change) -> pl.DataFrame:
    if change is SECOND_AS_FIRST:
        return pl.concat([frame.head(1), frame.head(1), frame.slice(2)])
    if isinstance(change, dict) and isinstance(change.get("extra_info"), str):
        field = change["extra_info"].split()[1]
        second = frame["extra_info"].struct.field(field)[1]
        return frame.with_columns(_field("extra_info", **{field: pl.lit(second)}))
    if isinstance(change, dict):
        return frame.with_columns(_first(c, v) for c, v in change.items())
    role, content = pl.element().struct.field("role"), pl.element().struct.field("content")
    named = {
        "task_in_both_splits": lambda f: f.with_columns(
            pl.when(pl.col("task_id") == f["task_id"][0], pl.int_range(pl.len()).over("task_id") == 0)
            .then(pl.when(pl.col("split") == "train").then(pl.lit("validation")).otherwise(pl.lit("train")))
            .otherwise(pl.col("split"))
            .alias("split")
        ),
        "robot_role": lambda f: f.with_columns(
            _messages(
                pl.col("messages").list.eval(
                    pl.element().struct.with_fields(role=pl.when(role == "user").then(pl.lit("robot")).otherwise(role))
                )
            )
        ),
        "ends_on_tool": lambda f: f.with_columns(
            _messages(
                pl.col("messages").list.eval(
                    pl.element().struct.with_fields(
                        role=pl.when(pl.int_range(pl.len()) == pl.len() - 1).then(pl.lit("tool")).otherwise(role)
                    )
                )
            )
        ),
        "secret_in_json_content": lambda f: f.with_columns(
            _messages(
                pl.col("messages").list.eval(
                    pl.element().struct.with_fields(
                        content=pl.when(role == "user").then(pl.lit(HELD)).otherwise(content)
                    )
                )
            )
        ),
        "one_message": lambda f: f.with_columns(_messages(pl.col("messages").list.head(1))),
        "model_style": lambda f: f.with_columns(_field("reward_model", style=pl.lit("model"))),
        "test_split": lambda f: f.with_columns(_field("extra_info", split=pl.lit("test"))),
        "empty_ground_truth": lambda f: f.with_columns(_field("reward_model", ground_truth=pl.lit("[]"))),
        "user_only_prompt": lambda f: f.with_columns(_first("prompt", pl.col("prompt").list.tail(1))),
        "pass_rate_above_1": lambda f: f.with_columns(_field("extra_info", teacher_pass_rate=pl.lit(1.5))),
        "held_out_task": lambda f: f.with_columns(_field("extra_info", task_id=pl.lit(HELD_OUT))),
        "secret_ground_truth": lambda f: f.with_columns(
            _field(
                "reward_model",
                ground_truth=pl.lit(f'[{{"id": "k", "type": "keywords_present", "keywords": ["{SECRET}"]}}]'),
            )
        ),
    }
    return named[change](frame)


@pytest.fixture(scope="module")
def suites():
    with SuiteProcess() as process:
        yield process


@pytest.fixture(scope="module")
def valid(pipeline) -> dict[str, pl.DataFrame]:
    settings, _, _ = pipeline
    # as the gate reads a candidate (storage.iter_chunks): JSON fields as text
    return {d: plain(pl.read_parquet(Path(versions.current_path(settings.root, d)) / "*.parquet")) for d in BREAKS}


def test_every_expectation_of_every_suite_is_broken_below():
    for dataset, breaks in BREAKS.items():
        spec = json.loads((EXPECTATIONS / f"{dataset}.json").read_text())["expectations"]
        listed = {f"{e['type']} {e['kwargs']['column']}" for e in spec}
        broken = {f for _, _, failures in breaks for f in failures if not f.startswith("pandera:")}
        assert listed == broken, dataset


@pytest.mark.parametrize("dataset", list(BREAKS))
def test_the_published_versions_pass_their_gate(valid, suites, dataset):
    assert run_gate(dataset, [valid[dataset]], BUDGETS, suites) == (True, [])


@pytest.mark.parametrize(
    ("dataset", "what", "change", "expected"),
    [(d, w, c, e) for d, breaks in BREAKS.items() for w, c, e in breaks],
    ids=[f"{d}: {w}" for d, breaks in BREAKS.items() for w, _, _ in breaks],
)
def test_a_candidate_breaking_one_rule_fails_the_gate_on_that_rule(valid, suites, dataset, what, change, expected):
    broken = _break(dataset, valid[dataset], change)
    passed, failures = run_gate(dataset, [broken], BUDGETS, suites)
    found = {f"{f['expectation']} {f['column']}" for f in failures}
    assert not passed and expected <= found, (what, found)


@pytest.mark.parametrize("dataset", ["sft_dataset", "rl_rollouts"])
def test_a_duplicate_in_another_part_of_the_candidate_fails_the_gate(valid, suites, dataset):
    """The gate reads a candidate a part at a time; the suite sees every part's ids."""
    frame = valid[dataset]
    key = "sample_id" if dataset == "sft_dataset" else "trajectory_id"
    last = frame.tail(1).with_columns(pl.lit(frame[key][0]).alias(key))  # the first row's id, in a part of its own
    parts = [frame.head(frame.height // 2), frame.slice(frame.height // 2, frame.height - frame.height // 2 - 1), last]
    assert run_gate(dataset, parts[:2] + [frame.tail(1)], BUDGETS, suites) == (True, [])
    passed, failures = run_gate(dataset, parts, BUDGETS, suites)
    assert not passed
    assert {f"{f['expectation']} {f['column']}" for f in failures} == {f"expect_column_values_to_be_unique {key}"}
