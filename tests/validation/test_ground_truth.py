"""Recorded grades that cannot be trusted (`validation/ground_truth.py`), found by re-grade and named as task
findings: hand-made packages and runs with exact verdicts, and a tau-bench results file whose ground truth never
changed, read through the format."""

import orjson
import polars as pl

from cowork_assets.ingest.batch import ingest_batch
from cowork_assets.store.registry import TABLES
from cowork_assets.validation import ground_truth
from cowork_assets.validation.regrade import agreement, replay_grades
from cowork_assets.validation.tasks import untrusted_grades
from tests.check_types.test_db_match import CANCEL, TOOLS, check, run
from tests.test_rewards import _messages

OTHER = ("cancel_order", {"order_id": "#W2", "reason": "by mistake"})


def _state(writes: list, state: str | None) -> str:
    built = check(*writes)
    return orjson.dumps([{**built, "expected_state": state} if state else built]).decode()


def _packages(*rows: tuple[str, list, str | None]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"task_hash": h, "category": "retail", "checks": _state(writes, state)} for h, writes, state in rows]
    )


def _runs(*rows: tuple[str, str, bool, dict]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "trajectory_id": tid,
                "task_id": f"task-{h}",
                "category": "retail",
                "task_hash": h,
                "grade_score": float(passed),
                "grade_passed": passed,
                "grade_checks": orjson.dumps(recorded).decode(),
            }
            for tid, h, passed, recorded in rows
        ]
    )


def test_one_recorded_state_for_different_writes_and_the_starting_state_for_a_write_are_found():
    packages = _packages(
        ("reads", [], "S0"),  # writes nothing: S0 is the starting state
        ("cancel1", [CANCEL], "S0"),  # writes, yet ends where it started
        ("cancel2", [OTHER], "S1"),  # two tasks whose writes differ, one end state
        ("both", [CANCEL, OTHER], "S1"),
        ("fine", [CANCEL], "S2"),
    )
    found = ground_truth.untrusted_tasks(packages)
    assert {h: kind for h, (kind, _) in found.items()} == {
        "cancel1": "ground_truth_unchanged",
        "cancel2": "ground_truth_shared",
        "both": "ground_truth_shared",
    }
    assert found["cancel1"][1] == (
        "the recorded ground truth S0 is the end state of the tasks whose reference writes nothing: the "
        "reference's writes (cancel_order) do not change it"
    )


def test_regrade_names_the_untrusted_grade_and_leaves_its_runs_out_of_the_agreement():
    packages = _packages(("reads", [], "S0"), ("cancel1", [CANCEL], "S0"), ("fine", [CANCEL], "S2"))
    skipped, cancelled = run(), run((*CANCEL, "cancelled"))
    runs = _runs(
        ("skipped", "cancel1", True, {"db": True}),  # passed without the write: what a starting-state truth passes
        ("agrees", "fine", True, {"db": True}),
        ("quiet", "reads", True, {"db": True}),
    )
    messages = _messages({"skipped": skipped, "agrees": cancelled, "quiet": skipped})
    found = replay_grades("b", [(runs, messages)], packages).sort("trajectory_id")
    assert found.select("trajectory_id", "regraded_passed", "grade_untrusted", "disagreement").rows() == [
        ("agrees", True, None, None),
        ("quiet", True, None, None),
        ("skipped", False, "ground_truth_unchanged", "ground truth ignores the writes"),
    ]
    assert {k: v for k, v in agreement(found).items() if k != "reasons"} == {
        "compared": 2,
        "agree": 2,
        "rate": 1.0,
        "untrusted": 1,
    }
    findings = untrusted_grades(
        found.with_columns(task_hash=pl.lit("cancel1")).lazy().filter(pl.col("task_id") == "task-cancel1")
    )
    assert findings.select("task_id", "trajectory_id", "kind", "severity").rows() == [
        ("task-cancel1", None, "ground_truth_unchanged", "error")
    ]


def test_a_run_without_writes_recorded_as_reaching_the_reference_state_shows_the_writes_change_nothing():
    packages = _packages(("t", [CANCEL], None))  # tau2: no state hash, only each run's db_check
    runs = _runs(("idle", "t", True, {"db": True}), ("wrote", "t", True, {"db": True}))
    messages = _messages({"idle": run(), "wrote": run((*CANCEL, "cancelled"))})
    found = replay_grades("b", [(runs, messages)], packages).sort("trajectory_id")
    assert found.select("trajectory_id", "grade_untrusted", "disagreement").rows() == [
        ("idle", "ground_truth_unchanged", "ground truth ignores the writes"),
        ("wrote", "ground_truth_unchanged", None),  # agrees, but its grade says nothing either
    ]
    assert found["grade_untrusted_detail"][0] == (
        "run idle made no write and its end state was recorded as the reference's: the reference's writes "
        "(cancel_order) do not change it"
    )


def test_a_pass_with_writes_no_other_passing_run_made_is_untrusted():
    packages = _packages(("t", [CANCEL], None))
    runs = _runs(
        ("right1", "t", True, {}),
        ("right2", "t", True, {}),
        ("odd", "t", True, {}),
        ("failed", "t", False, {}),
    )
    messages = _messages(
        {
            "right1": run((*CANCEL, "cancelled")),
            "right2": run((*CANCEL, "cancelled")),
            "odd": run((*OTHER, "cancelled")),
            "failed": run((*OTHER, "cancelled")),
        }
    )
    found = replay_grades("b", [(runs, messages)], packages).sort("trajectory_id")
    assert found.select("trajectory_id", "grade_untrusted", "disagreement").rows() == [
        ("failed", None, None),
        ("odd", "passed_with_other_writes", "passing runs differ in writes"),
        ("right1", None, None),
        ("right2", None, None),
    ]
    alone = replay_grades("b", [(runs.filter(pl.col("trajectory_id") == "odd"), messages)], packages)
    assert alone.select("grade_untrusted", "disagreement").row(0) == (None, "write arguments differ")  # no witness


def test_the_disagreement_names_the_writes():
    packages = _packages(("t", [CANCEL, ("exchange_items", {"item_ids": ["a"], "new_item_ids": ["b"]})], None))
    runs = _runs(("r", "t", True, {}), ("x", "t", True, {}))
    made = {
        "r": run((*CANCEL, "cancelled")),
        "x": run((*CANCEL, "ok"), ("exchange_items", {"item_ids": ["a"], "new_item_ids": ["c"]}, "ok"), (*OTHER, "ok")),
    }
    found = replay_grades("b", [(runs, _messages(made))], packages).sort("trajectory_id")
    assert found.select("grade_untrusted", "disagreement", "disagreement_detail").rows() == [
        (None, "reference write not made", "not made: exchange_items(item_ids=[a], new_item_ids=[b])"),
        (
            None,  # two passes with different writes, but neither the reference's: no witness against either
            "write arguments differ",
            "not made: exchange_items(item_ids=[a], new_item_ids=[b]); made: cancel_order(order_id=#W2, "
            "reason=by mistake), exchange_items(item_ids=[a], new_item_ids=[c])",
        ),
    ]


def _tau_run(task_id: int, actions: list, state: str, reward: float, calls: list) -> dict:
    traj = [{"role": "system", "content": "policy"}, {"role": "user", "content": "hi"}]
    for i, (name, args, result) in enumerate(calls):
        fn = {"name": name, "arguments": orjson.dumps(args).decode()}
        traj.append(
            {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": fn}]}
        )
        traj.append({"role": "tool", "tool_call_id": f"c{i}", "name": name, "content": result})
    traj.append({"role": "assistant", "content": "Done."})
    info = {"r_actions": reward, "gt_data_hash": state}
    task = {"user_id": "u", "instruction": f"task {task_id}", "actions": actions, "outputs": []}
    return {
        "task_id": task_id,
        "trial": 0,
        "reward": reward,
        "info": {"task": task, "reward_info": {"reward": reward, "info": info}},
        "traj": traj,
    }


def test_a_tau_bench_file_whose_ground_truth_never_changed_is_flagged_for_every_writing_task(tmp_path):
    """As in a public results file: every graded run carries one gt_data_hash though the tasks write different
    things, so a run that skips its writes passes."""
    batch = tmp_path / "raw" / "tau"
    batch.mkdir(parents=True)
    cancel = {"name": "cancel_order", "kwargs": {"order_id": "#W1", "reason": "by mistake"}}
    other = {"name": "cancel_order", "kwargs": {"order_id": "#W2", "reason": "by mistake"}}
    lookup = {"name": "get_order", "kwargs": {"order_id": "#W1"}}
    runs = [
        _tau_run(1, [lookup], "H", 1.0, []),  # writes nothing
        _tau_run(2, [lookup, cancel], "H", 1.0, []),  # skipped its write, passed
        _tau_run(3, [other], "H", 1.0, [("cancel_order", other["kwargs"], "cancelled")]),
    ]
    (batch / "broken-retail.json").write_bytes(orjson.dumps(runs))
    (batch / "tools_retail.json").write_bytes(orjson.dumps([{"type": "function", "function": t} for t in TOOLS]))
    ingest_batch(tmp_path / "raw", "tau", str(tmp_path / "out"))
    read = lambda t: TABLES[t].read(str(tmp_path / "out"), "tau")  # noqa: E731
    found = replay_grades("tau", [(read("trajectories"), read("messages"))], read("task_packages")).sort(
        "trajectory_id"
    )
    assert found.select("task_id", "recorded_passed", "regraded_passed", "grade_untrusted", "disagreement").rows() == [
        ("tau-retail-1", True, True, None, None),
        ("tau-retail-2", True, False, "ground_truth_unchanged", "ground truth ignores the writes"),
        ("tau-retail-3", True, True, "ground_truth_unchanged", None),
    ]
    checks = orjson.loads(read("task_packages").filter(pl.col("task_id") == "tau-retail-2")["checks"][0])
    assert [(c["id"], c["type"], c.get("weight", 1.0)) for c in checks] == [
        ("action_0", "tool_called", 0.0),  # the reference's calls: evidence, not graded
        ("action_1", "tool_called", 0.0),
        ("db", "db_match", 1.0),  # the end state: graded
    ]
    assert checks[2]["writes"] == [{"tool": "cancel_order", "args": cancel["kwargs"]}]
    assert checks[2]["expected_state"] == "H"
