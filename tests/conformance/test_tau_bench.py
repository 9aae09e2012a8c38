"""The tau-bench adapter, on hand-made files and on the real runs in ../shared/realdata/tau_bench."""

import json
import re
import shutil

import orjson
import polars as pl
import pytest

from cowork_assets.ingest.batch import ingest_batch
from cowork_assets.store.registry import TABLES
from tests.conftest import SHARED

TAU = SHARED / "realdata" / "tau_bench"


def _run(task_id, trial=0, reward=1.0, **over):
    run = {
        "task_id": task_id,
        "trial": trial,
        "reward": reward,
        "info": {
            "task": {
                "user_id": "u_1",
                "instruction": "Exchange my lamp.",
                "actions": [{"name": "exchange", "kwargs": {"order_id": "#W1234567", "item_ids": ["7453605304"]}}],
                "outputs": ["189.57"],
            },
            "reward_info": {"reward": reward, "info": {"r_actions": reward}, "actions": []},
        },
        "traj": [
            {"role": "system", "content": "policy"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Done: 189.57", "refusal": None},
        ],
    }
    run.update(over)
    return run


def test_results_file_becomes_trajectories_with_checks_grades_and_tools(tmp_path):
    batch = tmp_path / "raw" / "tau"
    batch.mkdir(parents=True)
    (batch / "x-retail.json").write_bytes(orjson.dumps([_run(1), _run(2, reward=0.0), {"task_id": 3}]))
    (batch / "tools_retail.json").write_bytes(
        orjson.dumps(
            [
                {
                    "type": "function",
                    "function": {"name": "exchange", "description": "d", "parameters": {"type": "object"}},
                }
            ]
        )
    )
    (batch / "notes.json").write_bytes(b'{"hello": 1}')
    (batch / "broken-retail.json").write_bytes(b"[{")
    report = ingest_batch(tmp_path / "raw", "tau", tmp_path / "out")
    assert (report.raw_records, report.parsed, report.quarantined) == (4, 2, 2)
    assert report.skipped == [("tau/notes.json", "a JSON object (hello) that no format reads")]
    q = TABLES["quarantine"].read(tmp_path / "out", "tau").sort("raw_file")
    assert q.select("raw_file", "raw_record", "reason").rows() == [
        ("tau/broken-retail.json", 1, "bad_json"),
        ("tau/x-retail.json", 3, "bad_tau_record"),
    ]
    t = TABLES["trajectories"].read(tmp_path / "out", "tau").sort("raw_record")
    assert t.select("trajectory_id", "task_id", "category", "teacher_model", "grade_passed", "raw_record").rows() == [
        ("x-retail:1:0", "tau-retail-1", "tau_bench_retail", "x", True, 1),
        ("x-retail:2:0", "tau-retail-2", "tau_bench_retail", "x", False, 2),
    ]
    assert orjson.loads(t["grade_checks"][1]) == {"db": False}  # r_actions: the end state
    p = TABLES["task_packages"].read(tmp_path / "out", "tau").row(0, named=True)
    assert p["check_types"] == ["tool_called", "db_match", "keywords_present"]
    assert [tool["name"] for tool in orjson.loads(p["tools"])] == ["exchange"]
    assert orjson.loads(p["checks"])[0]["args"] == {"order_id": "#W1234567", "item_ids": ["7453605304"]}


def test_without_a_tools_file_tools_come_from_the_calls_seen(tmp_path):
    batch = tmp_path / "raw" / "tau"
    batch.mkdir(parents=True)
    (batch / "y-airline.json").write_bytes(orjson.dumps([_run(1)]))
    ingest_batch(tmp_path / "raw", "tau", tmp_path / "out")
    p = TABLES["task_packages"].read(tmp_path / "out", "tau").row(0, named=True)
    assert [tool["name"] for tool in orjson.loads(p["tools"])] == ["exchange"] and p["category"] == "tau_bench_airline"


# Real runs. With `head` at 1,000 characters, successful retail runs lose reference-action ids and
# output strings. Checked by hand in the raw file: task 6's 7453605304 first appears at char 1329 of
# the get_product_details observation (message 21) and is used at message 28; task 29's output 189.57
# sits at char 1636 of message 11; task 16's 3131.1 (an order amount at char 1149 of a
# get_order_details observation) is summed by the agent in a `calculate` call.
RETAIL_LOST_UNDER_HEAD = {
    (6, "action_5", "7453605304"),
    (7, "action_5", "1569765161"),
    (15, "action_6", "3613716226"),
    (16, "grounding", "3131.1"),
    (16, "grounding", "4777.75"),
    (19, "grounding", "180.93"),
    (23, "action_9", "8926329222"),
    (27, "action_5", "8277474082"),
    (29, "action_4", "8176740019"),
    (29, "output_1", "189.57"),
    (35, "action_6", "5052031638"),
    (36, "action_9", "3234800602"),
    (36, "grounding", "193.38"),
    (36, "grounding", "285.66"),
    (36, "grounding", "46.66"),
    (37, "action_9", "3234800602"),
    (37, "grounding", "193.38"),
    (37, "grounding", "285.66"),
    (37, "grounding", "46.66"),
    (43, "output_0", "840887978435"),
    (45, "action_4", "6259501109"),
    (45, "action_4", "7958300294"),
    (46, "action_5", "6259501109"),
    (46, "grounding", "652.61"),
    (52, "action_4", "9228757377"),
    (54, "grounding", "1030.4"),
    (54, "grounding", "1186.47"),
    (56, "action_6", "9534205511"),
    (58, "action_5", "3815173328"),
    (58, "action_5", "6017636844"),
    (58, "grounding", "2292.37"),
    (58, "grounding", "2908.42"),
    (60, "output_0", "242.92"),
    (62, "grounding", "1319.43"),
    (70, "action_0", "9013366374"),
    (70, "grounding", "219.88"),
    (75, "action_0", "4063058357"),
    (90, "grounding", "3066.23"),
    (93, "action_0", "9844888101"),
    (94, "action_0", "9844888101"),
    (95, "action_0", "9844888101"),
    (95, "grounding", "2459.74"),
    (96, "action_0", "9844888101"),
    (96, "action_1", "9844888101"),
    (96, "grounding", "2459.74"),
    (96, "grounding", "2530.72"),
    (96, "grounding", "3265035808"),
    (100, "action_1", "5546244844"),
    (106, "action_0", "3761330360"),
    (111, "grounding", "4913411651"),
}


@pytest.fixture(scope="module")
def tau_run(tmp_path_factory):
    if not TAU.is_dir():
        pytest.skip("../shared/realdata/tau_bench is not present")
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    base = tmp_path_factory.mktemp("tau")
    (base / "raw" / "tau_bench").mkdir(parents=True)
    for f in TAU.glob("*.json"):
        shutil.copy(f, base / "raw" / "tau_bench" / f.name)
    instance = ensure_instance(base / "home")
    runs = {}
    for strategy in ("head", "evidence_aware"):
        settings = CurateSettings(
            raw_root=str(base / "raw"),
            data_root=str(base / strategy),
            truncation_strategy=strategy,
            max_observation_chars=1000,
        )
        runs[strategy] = (settings, materialize_all(settings, instance, echo=lambda _: None))
    return runs


def test_real_runs_all_parse(tau_run):
    settings, outcome = tau_run["head"]
    assert list(outcome.failed) == ["publication"]  # head loses evidence: its ERROR check blocks publication
    assert "(evidence_audit:evidence_lost_to_truncation)" in outcome.failed["publication"]
    t = TABLES["trajectories"].scan(settings.root).collect()
    assert t.height == 315 and t.filter(pl.col("grade_passed")).height == 86 + 84


def test_head_loses_exactly_these_values_in_successful_retail_runs_and_fails_the_check(tau_run):
    settings, outcome = tau_run["head"]
    audit = TABLES["evidence_audit"].scan(settings.root).collect()
    rollup = TABLES["evidence_rollup"].scan(settings.root).collect()
    lost = audit.join(rollup.select("trajectory_id", "passing_teacher"), on="trajectory_id").filter(
        pl.col("lost_to_truncation"), pl.col("passing_teacher"), pl.col("trajectory_id").str.starts_with("madhavkanda")
    )
    got = {(int(t.split(":")[1]), c, v) for t, c, v in lost.select("trajectory_id", "check_id", "value").iter_rows()}
    assert got == RETAIL_LOST_UNDER_HEAD
    assert "evidence_audit:evidence_lost_to_truncation [tau_bench] (ERROR)" in outcome.failed_checks
    assert "7453605304" in outcome.check_details["evidence_audit:evidence_lost_to_truncation [tau_bench] (ERROR)"]


def test_evidence_aware_loses_none_at_a_similar_character_count(tau_run):
    settings, outcome = tau_run["evidence_aware"]
    assert not [c for c in outcome.failed_checks if c.endswith("(ERROR)")]
    audit = TABLES["evidence_audit"].scan(settings.root).collect()
    assert audit.filter(pl.col("status") == "at_risk").height > 1000
    assert not audit["lost_to_truncation"].any()
    stats = TABLES["sample_stats"].scan(settings.root).collect()
    chars = (
        stats.select(pl.col("chars_under").explode().struct.unnest()).group_by("strategy").agg(pl.col("chars").sum())
    )
    head, aware = (chars.filter(pl.col("strategy") == s)["chars"].item() for s in ("head", "evidence_aware"))
    assert head <= aware <= head * 1.01


def _lost_under_head(run: dict, value: str, allowance: int = 1000) -> bool:
    """Read straight from the raw run: the agent uses `value` (in its text or tool calls), and every earlier
    message showing it is a tool observation showing it only past its first `allowance` characters. A
    match is case-insensitive and not inside a longer word or number."""
    boundary = re.compile(rf"(?<![0-9a-z]){re.escape(value)}(?![0-9a-z])", re.IGNORECASE)
    for i, message in enumerate(run["traj"]):
        used = (message.get("content") or "") + json.dumps(message.get("tool_calls") or []).replace("\\", "")
        if message["role"] == "assistant" and boundary.search(used):
            shown = [
                (m["role"], hit.end()) for m in run["traj"][:i] for hit in boundary.finditer(m.get("content") or "")
            ]
            return bool(shown) and all(role == "tool" and end > allowance for role, end in shown)
    return False


def test_each_value_head_loses_is_beyond_the_first_1000_characters_of_an_observation_in_the_raw_file():
    """An oracle that shares nothing with the pipeline: every listed value is, in the raw file, shown before
    the agent uses it only past character 1,000 of tool observations, and belongs to the check named; and
    every 10-digit id of a successful run's reference actions that is so placed is listed."""
    if not TAU.is_dir():
        pytest.skip("../shared/realdata/tau_bench is not present")
    runs = {r["task_id"]: r for r in json.loads((TAU / "madhavkanda-l0-gpt-4o-retail.json").read_text())}
    for task, check, value in sorted(RETAIL_LOST_UNDER_HEAD):
        run = runs[task]
        assert run["reward"] == 1, task
        assert _lost_under_head(run, value), (task, value)
        kind, _, index = check.partition("_")
        if kind == "action":
            assert value in json.dumps(run["info"]["task"]["actions"][int(index)]["kwargs"]), (task, check)
        elif kind == "output":
            assert run["info"]["task"]["outputs"][int(index)].replace(",", "") == value, (task, check)
        else:  # grounding: a value the agent passes in a tool call
            calls = [c for m in run["traj"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
            assert any(value in c["function"]["arguments"] for c in calls), (task, value)
    placed = set()
    for task, run in runs.items():
        if run["reward"] != 1:
            continue
        for j, action in enumerate(run["info"]["task"]["actions"]):
            for value in set(re.findall(r"\b[0-9]{10}\b", json.dumps(action["kwargs"]))):
                if _lost_under_head(run, value):
                    placed.add((task, f"action_{j}", value))
    assert placed == {e for e in RETAIL_LOST_UNDER_HEAD if e[1].startswith("action") and len(e[2]) == 10}
