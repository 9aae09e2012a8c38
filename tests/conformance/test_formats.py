"""The input-format registry and each real-agent format, on hand-made files with exact expectations."""

import importlib
import sys
from pathlib import Path

import orjson
import polars as pl
import pytest

from cowork_assets.ingest import formats
from cowork_assets.ingest.batch import ingest_batch
from cowork_assets.ingest.formats import Sample, discover, recount_batch, registry
from cowork_assets.store.registry import TABLES
from tests.conftest import TESTS

FORMATS_DIR = Path(formats.__file__).parent


def _ingest(tmp_path, files: dict[str, bytes], batch: str = "b"):
    folder = tmp_path / "raw" / batch
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    report = ingest_batch(tmp_path / "raw", batch, tmp_path / "out")

    def read(table):
        return TABLES[table].read(tmp_path / "out", batch)

    return report, read


def _messages(read, trajectory_id):
    m = read("messages").filter(pl.col("trajectory_id") == trajectory_id).sort("message_index")
    return [
        (r["role"], r["content"], [c["name"] for c in r["tool_calls"]], r["tool_call_id"])
        for r in m.iter_rows(named=True)
    ]


# --- the registry -----------------------------------------------------------------------------------


def test_the_registry_is_every_module_of_the_package_with_detect_and_records():
    modules = sorted(p.stem for p in FORMATS_DIR.glob("*.py") if not p.stem.startswith("_"))
    assert sorted(m.__name__.rsplit(".", 1)[1] for m in registry().values()) == modules
    assert all(name == m.__name__.rsplit(".", 1)[1] for name, m in registry().items())  # NAME is the module


def test_a_new_format_module_is_found_without_editing_detection(tmp_path, monkeypatch):
    package = tmp_path / "more_formats"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_helpers.py").write_text("def detect(sample): return True\ndef records(s, b): return iter(())\n")
    (package / "csv_runs.py").write_text(
        "NAME = 'csv_runs'\nPRIORITY = 5\nRECORDS = 'lines'\n"
        "def detect(sample): return sample.path.suffix == '.csv'\n"
        "def records(sample, batch): return iter(())\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    found = discover(importlib.import_module("more_formats"))
    assert [m.NAME for m in found] == ["csv_runs"]  # underscore modules are helpers, not formats
    (tmp_path / "runs.csv").write_text("a,b\n")
    assert (
        formats.detect(Sample(tmp_path / "runs.csv", "runs.csv"), found + list(registry().values())).NAME == "csv_runs"
    )
    sys.modules.pop("more_formats", None)


def test_an_unknown_forced_format_names_the_formats(tmp_path):
    with pytest.raises(ValueError, match="unknown format 'csv'; use one of .*'tau2'"):
        _ingest(tmp_path, {".cowork-format": b"csv", "a.jsonl": b"{}\n"})


def test_a_forced_format_leaves_auxiliary_files_alone(tmp_path):
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    report, _ = _ingest(
        tmp_path, {".cowork-format": b"cowork", "tools.json": orjson.dumps(tools), "a.jsonl": b'{"messages": []}\n'}
    )
    assert dict(report.formats) == {"cowork": 1} and report.skipped == []
    assert dict(report.reasons) == {"missing_field": 1}  # judged by the forced format's contract


def test_inputs_no_format_takes_are_named_with_reasons(tmp_path):
    import sqlite3

    other = sqlite3.connect(tmp_path / "other.db")
    other.execute("CREATE TABLE notes (id INTEGER, body TEXT)")
    other.close()
    report, read = _ingest(
        tmp_path,
        {
            "list.json": b"[1, 2, 3]",
            "scalar.json": b"42",
            "notes.txt": b"hello",
            "obj.json": b'{"b": 1, "a": 2}',
            "other.db": (tmp_path / "other.db").read_bytes(),
            "broken.db": b"SQLite format 3\x00" + b"\xff" * 200,
        },
    )
    assert report.raw_records == 0
    assert read("skipped_inputs").select("raw_file", "reason").rows() == [
        ("b/broken.db", "a SQLite database that does not open"),
        ("b/list.json", "a JSON list of 3 items that no format reads"),
        ("b/notes.txt", "not JSON Lines (*.jsonl, *.jsonl.gz) or a JSON document any format reads"),
        ("b/obj.json", "a JSON object (a, b) that no format reads"),
        ("b/other.db", "a SQLite database (tables: notes) that no format reads"),
        ("b/scalar.json", "a JSON int, not records"),
    ]


# --- tau2-bench ---------------------------------------------------------------------------------------

TASK = {
    "id": "7",
    "description": None,
    "ticket": "Customer 555-1234 has no data.",
    "user_scenario": {
        "persona": None,
        "instructions": {
            "domain": "retail",
            "reason_for_call": "Return order #W100200.",
            "known_info": "You are ana_7001.",
            "unknown_info": None,
            "task_instructions": "Be brief.",
        },
    },
    "initial_state": None,
    "evaluation_criteria": {
        "actions": [
            {
                "action_id": "7_0",
                "requestor": "assistant",
                "name": "get_order",
                "arguments": {"order_id": "#W100200"},
                "compare_args": None,
            },
            {
                "action_id": "7_1",
                "requestor": "assistant",
                "name": "return_items",
                "arguments": {"order_id": "#W100200", "reason": "too big", "item_ids": ["4411"]},
                "compare_args": ["order_id", "item_ids"],
            },
            {"action_id": "7_2", "requestor": "user", "name": "toggle_data", "arguments": {}},
        ],
        "env_assertions": [{"env_type": "user", "func_name": "assert_data_on", "arguments": {}, "assert_value": True}],
        "communicate_info": ["60.00"],
        "nl_assertions": ["Agent is polite"],
        "reward_basis": ["DB", "COMMUNICATE"],
    },
}


def _sim(i, task_id="7", reward=1.0, **extra):
    messages = [
        {"role": "assistant", "content": "Hi! How can I help you today?", "tool_calls": None, "turn_idx": 0},
        {"role": "user", "content": "Return #W100200 please.", "tool_calls": None},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "name": "get_order", "arguments": {"order_id": "#W100200"}, "requestor": "assistant"}
            ],
        },
        {
            "role": "tool",
            "id": "c1",
            "content": '{"items": [{"id": "4411"}], "total": "60.00"}',
            "requestor": "assistant",
        },
        {
            "role": "user",
            "content": None,
            "tool_calls": [{"id": "u1", "name": "toggle_data", "arguments": {}, "requestor": "user"}],
        },
        {"role": "tool", "id": "u1", "content": "Data on", "requestor": "user"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "name": "return_items",
                    "arguments": {"order_id": "#W100200", "item_ids": ["4411"]},
                    "requestor": "assistant",
                }
            ],
        },
        {"role": "tool", "id": "c1", "content": "ok", "requestor": "assistant"},
        {"role": "assistant", "content": "Refunded 60.00."},
    ]
    reward_info = (
        None
        if reward is None
        else {
            "reward": reward,
            "db_check": {"db_match": reward == 1.0, "db_reward": reward},
            "env_assertions": [{"env_assertion": {}, "met": True}],
            "action_checks": [
                {"action": {"action_id": "7_0"}, "action_match": True},
                {"action": {"action_id": "7_2"}, "action_match": True},
            ],
            "communicate_checks": [{"info": "60.00", "met": reward == 1.0}],
            "nl_assertions": [{"nl_assertion": "Agent is polite", "met": True}],
        }
    )
    return {
        "id": f"sim-{i}",
        "task_id": task_id,
        "trial": i,
        "termination_reason": "user_stop",
        "reward_info": reward_info,
        "messages": messages,
        **extra,
    }


def _tau2(simulations, **top):
    return orjson.dumps(
        {
            "timestamp": "t",
            "info": {
                "environment_info": {"domain_name": "retail", "policy": "You are a retail agent.", "tool_defs": None},
                "agent_info": {"llm": "gpt-x"},
            },
            "tasks": [TASK],
            "simulations": simulations,
            **top,
        }
    )


def test_tau2_simulations_become_the_agents_conversation_with_checks_and_grade(tmp_path):
    report, read = _ingest(tmp_path, {"run_retail.json": _tau2([_sim(0), _sim(1, reward=0.0)])})
    assert (report.raw_records, report.parsed, report.quarantined) == (2, 2, 0)
    assert dict(report.formats) == {"tau2": 1}
    assert _messages(read, "run_retail:7:0") == [
        ("system", "You are a retail agent.", [], None),  # the policy; the harness's greeting is left out
        ("user", "Return #W100200 please.", [], None),
        ("assistant", None, ["get_order"], None),
        ("tool", '{"items": [{"id": "4411"}], "total": "60.00"}', [], "c1"),
        ("assistant", None, ["return_items"], None),  # the user's own phone call and result are not the agent's
        ("tool", "ok", [], "c1~2"),  # a reused call id made unique
        ("assistant", "Refunded 60.00.", [], None),
    ]
    t = read("trajectories").sort("trajectory_id")
    assert t.select(
        "trajectory_id", "task_id", "category", "teacher_model", "grade_score", "grade_passed", "raw_record"
    ).rows() == [
        ("run_retail:7:0", "tau2-retail-7", "tau2_retail", "gpt-x", 1.0, True, 1),
        ("run_retail:7:1", "tau2-retail-7", "tau2_retail", "gpt-x", 0.0, False, 2),
    ]
    assert orjson.loads(t["grade_checks"][1]) == {
        "7_0": True,
        "communicate_0": False,
        "env_0": True,
        "db": False,
        "nl_0": True,
    }
    package = read("task_packages").row(0, named=True)
    assert package["request"] == "Return order #W100200.\nYou are ana_7001.\nBe brief."
    assert orjson.loads(package["checks"]) == [
        {"id": "7_0", "type": "tool_called", "tool": "get_order", "args": {"order_id": "#W100200"}, "weight": 0.0},
        {
            "id": "7_1",
            "type": "tool_called",
            "tool": "return_items",
            "args": {"order_id": "#W100200", "item_ids": ["4411"]},
            "weight": 0.0,
        },
        {"id": "communicate_0", "type": "keywords_present", "keywords": ["60.00"], "normalize": "tau_bench"},
        {
            "id": "env_0",
            "type": "env_assertion",
            "env_type": "user",
            "func_name": "assert_data_on",
            "arguments": {},
            "assert_value": True,
            "weight": 0.0,
        },
        {"id": "db", "type": "db_match", "match": "exact"},  # the user's own write is not in the agent's view
        {"id": "nl_0", "type": "nl_assertion", "assertion": "Agent is polite", "weight": 0.0},
    ]
    assert [t["name"] for t in orjson.loads(package["tools"])] == ["get_order", "return_items"]  # from the calls seen


def test_tau2_files_with_fewer_or_extra_keys_are_read_and_bad_simulations_quarantined(tmp_path):
    short = {k: v for k, v in _sim(2).items() if k not in ("termination_reason", "id")}  # 10 keys of the 13
    long = _sim(3, **{f"extra_{k}": k for k in range(12)})  # 25 keys
    no_task = {k: v for k, v in _sim(4).items() if k != "task_id"}
    report, read = _ingest(
        tmp_path,
        {
            "x_retail.json": _tau2(
                [short, long, no_task, _sim(5, task_id="99"), _sim(6, reward=None), "not a simulation"], extra_key=1
            )
        },
    )
    assert (report.raw_records, report.parsed, report.quarantined) == (6, 3, 3)
    q = read("quarantine").sort("raw_record")
    assert q.select("raw_record", "reason").rows() == [
        (3, "bad_tau2_record"),
        (4, "bad_tau2_record"),
        (6, "bad_tau2_record"),
    ]
    assert q["detail"].to_list() == [
        "simulation 3 has no task_id or no messages list",
        "simulation 4 is of task '99', not among the file's tasks",
        "simulation 6 has no task_id or no messages list",
    ]
    t = read("trajectories").sort("raw_record")
    assert t.select("raw_record", "grade_passed").rows() == [
        (1, True),
        (2, True),
        (5, None),
    ]  # no reward_info: ungraded


def test_tau2_file_parts_of_other_types_read_as_absent_and_a_bad_simulation_is_its_own_record(tmp_path):
    """The parts every simulation of a file shares (its environment, agent, tasks' criteria, the calls its tool list
    is rebuilt from) once failed the whole file as one `reader_error` (found by mutating the conformance corpus)."""
    listed = TASK | {"id": "8", "evaluation_criteria": [TASK["evaluation_criteria"]]}  # a list for an object
    odd = _sim(2) | {"messages": True}
    calls = _sim(3)
    calls["messages"][2] = calls["messages"][2] | {"tool_calls": 5}
    doc = orjson.loads(_tau2([_sim(1), odd, calls, _sim(4, task_id="8")]))
    doc["info"] = {"environment_info": ["retail"], "agent_info": "gpt-x"}
    doc["tasks"].append(listed)
    report, read = _ingest(tmp_path, {"x_retail.json": orjson.dumps(doc)})
    assert (report.raw_records, report.parsed, report.quarantined) == (4, 1, 3)
    other_type = "a field in it holds a value of another type or shape than the format writes"
    assert read("quarantine").sort("raw_record").select("raw_record", "reason", "detail").rows() == [
        (2, "bad_tau2_record", "simulation 2 has no task_id or no messages list"),
        (3, "bad_tau2_record", other_type),
        (4, "bad_tau2_record", other_type),
    ]
    t = read("trajectories").sort("raw_record")
    assert t.select("raw_record", "teacher_model").rows() == [(1, "unknown")]
    tools = orjson.loads(read("task_packages")["tools"][0])
    assert [tool["name"] for tool in tools] == ["get_order", "return_items"]  # from the calls and actions readable


def test_tau2_solo_runs_get_the_ticket_as_the_users_message(tmp_path):
    solo = _sim(0)
    solo["messages"] = [m for m in solo["messages"] if m["role"] != "user" and m.get("requestor") != "user"][1:]
    _, read = _ingest(tmp_path, {"solo_retail.json": _tau2([solo])})
    assert [m[:2] for m in _messages(read, "solo_retail:7:0")[:3]] == [
        ("system", "You are a retail agent."),
        ("user", "Customer 555-1234 has no data."),
        ("assistant", None),
    ]
    assert read("task_packages")["request"].to_list() == ["Customer 555-1234 has no data."]


# --- coding agents ------------------------------------------------------------------------------------


def test_mini_swe_agent_fenced_commands_become_bash_calls_graded_by_a_report(tmp_path):
    old = [
        {"role": "system", "content": "Use bash."},
        {"role": "user", "content": "Fix bug 12."},
        {"role": "assistant", "content": "Look:\n```bash\nls src\n```"},
        {"role": "user", "content": "<output>app.py</output>"},
        {"role": "assistant", "content": "Done.\n```mswea_bash_command\necho COMPLETE\n```"},
        {"role": "user", "content": "COMPLETE"},
    ]
    new = {
        "trajectory_format": "mini-swe-agent-1.1",
        "instance_id": "repo__7",
        "info": {"exit_status": "Submitted", "config": {"model": {"model_name": "m-1"}}},
        "messages": [
            {"role": "user", "content": "Fix 7"},
            {
                "role": "assistant",
                "content": "ok",
                "tool_calls": [
                    {"id": "t1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "t1", "content": "a.py"},
            {"role": "assistant", "content": "done"},
        ],
    }
    report, read = _ingest(
        tmp_path,
        {
            "old.traj.json": orjson.dumps(old),
            "new.traj.json": orjson.dumps(new),
            "report.json": orjson.dumps({"resolved_ids": ["repo__7"], "unresolved_ids": ["old"]}),
        },
    )
    assert dict(report.formats) == {"mini_swe_agent": 2} and report.skipped == []
    calls = read("tool_calls").sort("trajectory_id", "message_index")
    assert calls.select("trajectory_id", "tool_name", "arguments", "observation").rows() == [
        ("new", "bash", '{"command": "ls"}', "a.py"),
        ("old", "bash", '{"command":"ls src"}', "<output>app.py</output>"),
        ("old", "bash", '{"command":"echo COMPLETE"}', "COMPLETE"),
    ]
    t = read("trajectories").sort("trajectory_id")
    assert t.select("trajectory_id", "task_id", "teacher_model", "grade_passed").rows() == [
        ("new", "repo__7", "m-1", True),
        ("old", "old", "unknown", False),
    ]


def _mini_run(instance: str) -> bytes:
    return orjson.dumps(
        {
            "trajectory_format": "mini-swe-agent-1.1",
            "instance_id": instance,
            "info": {"exit_status": "Submitted"},
            "messages": [{"role": "user", "content": f"Fix {instance}"}, {"role": "assistant", "content": "done"}],
        }
    )


@pytest.mark.parametrize(
    "reports, expected",
    [
        # the harness's run report and sb-cli's: id lists
        ({"run.json": {"resolved_ids": ["a__1"], "unresolved_ids": ["b__2"], "error_ids": []}}, (True, False, None)),
        # per-instance report.json keyed by instance id
        (
            {"eval.json": {"a__1": {"resolved": True, "tests_status": {}}, "b__2": {"resolved": False}}},
            (True, False, None),
        ),
        # the same without the key: named after its instance
        (
            {
                "a__1.report.json": {"resolved": False, "tests_status": {}},
                "b__2.json": {"resolved": True, "tests_status": {}},
            },
            (False, True, None),
        ),
        ({"report.json": {"resolved": True, "tests_status": {}}}, (None, None, None)),  # names no instance
        ({}, (None, None, None)),  # no report: ungraded
    ],
)
def test_swe_bench_reports_grade_coding_runs_by_instance_and_name_their_file(tmp_path, reports, expected):
    files = {f"{i}.traj.json": _mini_run(i) for i in ("a__1", "b__2", "c__3")}
    report, read = _ingest(tmp_path, {**files, **{name: orjson.dumps(doc) for name, doc in reports.items()}})
    assert report.skipped == [] and report.quarantined == 0 and report.raw_records == 3
    assert recount_batch(tmp_path / "raw", "b") == 3  # the independent recount sees the reports as no records too
    t = read("trajectories").sort("task_id")
    assert tuple(t["grade_passed"].to_list()) == expected
    for passed, checks in t.select("grade_passed", "grade_checks").iter_rows():
        if passed is not None:
            (source, verdict), *rest = orjson.loads(checks).items()
            assert not rest and verdict == passed and source.removeprefix("b/") in reports


@pytest.mark.parametrize(
    "test_result, grade",
    [
        ({"git_patch": "diff", "report": {"resolved": True}}, (1.0, True)),
        ({"git_patch": "diff", "resolved": False}, (0.0, False)),
        ({"checkpoints": [], "final_score": {"total": 4, "result": 3}}, (0.75, False)),
        ({"checkpoints": [], "final_score": {"total": 2, "result": 2}}, (1.0, True)),
        ({"error": "the grader crashed: docker timeout"}, (None, None)),  # a grader error is ungraded, not a fail
        ({"checkpoints": [], "final_score": {"total": 0, "result": 0}}, (None, None)),  # nothing was graded
        ({"git_patch": "diff"}, (None, None)),
    ],
)
def test_an_openhands_output_is_graded_by_its_own_test_result(tmp_path, test_result, grade):
    run = {
        "instance_id": "org__repo-1",
        "instruction": "Fix it",
        "history": [
            {"id": 1, "source": "user", "action": "message", "args": {"content": "Fix it"}},
            {"id": 2, "source": "agent", "action": "message", "args": {"content": "Fixed."}},
        ],
        "test_result": test_result,
    }
    _, read = _ingest(tmp_path, {"output.jsonl": orjson.dumps(run) + b"\n"})
    assert read("trajectories").select("grade_score", "grade_passed").row(0) == grade


def test_openhands_events_and_older_pairs_become_calls_and_observations(tmp_path):
    events = {
        "instance_id": "org__repo-1",
        "instruction": "Fix it",
        "metadata": {"llm_config": {"model": "llm-x"}},
        "history": [
            {"id": 0, "source": "agent", "action": "system", "args": {"content": "You are OpenHands."}},
            {"id": 1, "source": "user", "action": "message", "message": "Fix it", "args": {"content": "Fix it"}},
            {"id": 2, "source": "user", "action": "recall", "args": {}},
            {"id": 3, "source": "environment", "observation": "recall", "cause": 2, "content": "ctx"},
            {
                "id": 4,
                "source": "agent",
                "action": "run",
                "args": {"command": "ls", "thought": "look"},
                "tool_call_metadata": {
                    "function_name": "execute_bash",
                    "tool_call_id": "toolu_1",
                    "model_response": {
                        "id": "r1",
                        "choices": [
                            {
                                "message": {
                                    "content": "Let me look.",
                                    "tool_calls": [
                                        {
                                            "id": "toolu_1",
                                            "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'},
                                        }
                                    ],
                                }
                            }
                        ],
                    },
                },
            },
            {
                "id": 5,
                "source": "agent",
                "observation": "run",
                "cause": 4,
                "content": "main.c",
                "tool_call_metadata": {"tool_call_id": "toolu_1"},
            },
            {"id": 6, "source": "agent", "action": "finish", "args": {"final_thought": "Fixed main.c"}},
        ],
    }
    pairs = {
        "instance_id": "org__repo-2",
        "instruction": "Fix two",
        "history": [
            [{"source": "user", "action": "message", "args": {"content": "Fix two"}}, {"observation": "null"}],
            [
                {"source": "agent", "action": "run", "args": {"command": "cat x.py", "thought": "read"}},
                {"observation": "run", "content": "print(1)"},
            ],
            [{"source": "agent", "action": "message", "args": {"content": "All done"}}, {}],
        ],
    }
    report, read = _ingest(tmp_path, {"output.jsonl": orjson.dumps(events) + b"\n" + orjson.dumps(pairs) + b"\n"})
    assert dict(report.formats) == {"openhands": 1} and (report.parsed, report.quarantined) == (2, 0)
    assert _messages(read, "output:org__repo-1") == [
        ("system", "You are OpenHands.", [], None),
        ("user", "Fix it", [], None),
        ("assistant", "Let me look.", ["execute_bash"], None),
        ("tool", "main.c", [], "toolu_1"),
        ("assistant", "Fixed main.c", [], None),
    ]
    assert _messages(read, "output:org__repo-2") == [
        ("user", "Fix two", [], None),
        ("assistant", "read", ["execute_bash"], None),
        ("tool", "print(1)", [], "call_pair_1"),
        ("assistant", "All done", [], None),
    ]
    assert read("trajectories").sort("trajectory_id").select("teacher_model", "grade_passed").rows() == [
        ("llm-x", None),
        ("unknown", None),
    ]  # no report beside them: ungraded


def test_swe_agent_history_with_reused_call_ids_answers_every_call(tmp_path):
    def turn(i, name):
        return [
            {
                "role": "assistant",
                "content": f"step {i}",
                "message_type": "action",
                "action": name,
                "tool_calls": [{"id": "call_a", "type": "function", "function": {"name": name, "arguments": "{}"}}],
            },
            {"role": "tool", "content": f"out {i}", "message_type": "observation", "tool_call_ids": ["call_a"]},
        ]

    traj = {
        "environment": "main",
        "trajectory": [{}],
        "info": {"exit_status": "submitted"},
        "replay_config": orjson.dumps(
            {"problem_statement": {"id": "pkg__pkg-9"}, "agent": {"model": {"name": "gpt-4o"}}}
        ).decode(),
        "history": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "issue"},
            *turn(1, "open"),
            *turn(2, "edit"),
            {"role": "assistant", "content": "submitted"},
        ],
    }
    _, read = _ingest(tmp_path, {"pkg__pkg-9.traj": orjson.dumps(traj)})
    calls = read("tool_calls").sort("message_index")
    assert calls.select("call_id", "tool_name", "observation").rows() == [
        ("call_a", "open", "out 1"),
        ("call_a~2", "edit", "out 2"),
    ]
    assert read("trajectories").select("trajectory_id", "task_id", "teacher_model").rows() == [
        ("pkg__pkg-9", "pkg__pkg-9", "gpt-4o")
    ]


# --- ATIF as Terminus-2 writes it --------------------------------------------------------------------

TERMINUS = {
    "schema_version": "ATIF-v1.2",
    "session_id": "s-1",
    "agent": {
        "name": "terminus-2",
        "model_name": "m",
        "tool_definitions": [
            {
                "type": "function",
                "function": {
                    "name": "bash",
                    "parameters": {
                        "type": "object",
                        "additionalProperties": None,
                        "properties": {"keystrokes": {"type": "string", "enum": None}},
                    },
                },
            }
        ],
    },
    "steps": [
        {
            "step_id": 1,
            "source": "user",
            "message": [{"type": "text", "text": "List files "}, {"type": "text", "text": "in /srv"}],
        },
        {
            "step_id": 2,
            "source": "agent",
            "message": "Listing.",
            "tool_calls": [{"tool_call_id": "k1", "function_name": "bash", "arguments": {"keystrokes": "ls /srv\n"}}],
            "observation": {"results": [{"content": "data-2024.csv"}]},
        },
        {
            "step_id": 3,
            "source": "agent",
            "message": "Two at once.",
            "tool_calls": [
                {
                    "tool_call_id": "k2",
                    "function_name": "bash",
                    "arguments": {"keystrokes": "wc -l /srv/data-2024.csv\n"},
                },
                {
                    "tool_call_id": "k3",
                    "function_name": "bash",
                    "arguments": {"keystrokes": "head -1 /srv/data-2024.csv\n"},
                },
            ],
            "observation": {"results": [{"content": "12 /srv/data-2024.csv"}, {"content": "id,name"}]},
        },
        {"step_id": 4, "source": "agent", "message": "data-2024.csv has 12 lines."},
    ],
}


def test_terminus_style_atif_has_no_structural_errors_and_unique_ids(tmp_path):
    from cowork_assets.validation.structure import find_structure_findings

    report, read = _ingest(tmp_path, {"t1.json": orjson.dumps(TERMINUS), "t2.json": orjson.dumps(TERMINUS)})
    assert (report.parsed, report.quarantined) == (2, 0)
    assert dict(report.notes) == {"null_schema_keywords_dropped": 4, "ids_made_unique_with_file_name": 1}
    assert sorted(read("trajectories")["trajectory_id"]) == ["s-1", "s-1@t2.json"]
    assert _messages(read, "s-1") == [
        ("user", "List files in /srv", [], None),
        ("assistant", "Listing.", ["bash"], None),
        ("tool", "data-2024.csv", [], "k1"),  # the step's only call
        ("assistant", "Two at once.", ["bash", "bash"], None),
        ("tool", "12 /srv/data-2024.csv", [], None),
        ("tool", "id,name", [], None),  # two calls: no id to guess
        ("assistant", "data-2024.csv has 12 lines.", [], None),
    ]
    tools = orjson.loads(read("task_packages")["tools"][0])
    assert tools[0]["parameters"] == {"type": "object", "properties": {"keystrokes": {"type": "string"}}}
    findings = find_structure_findings(
        "b", read("trajectories"), read("task_packages"), read("messages"), read("tool_calls"), "o200k_base"
    )
    assert findings.filter(pl.col("severity") == "error").is_empty()


def test_terminus_style_atif_reaches_sft_when_ungraded_runs_are_accepted(tmp_path):
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    (tmp_path / "raw" / "atif").mkdir(parents=True)
    (tmp_path / "raw" / "atif" / "t1.json").write_bytes(orjson.dumps(TERMINUS))
    settings = CurateSettings(raw_root=str(tmp_path / "raw"), data_root=str(tmp_path / "out"), accept_ungraded=True)
    assert materialize_all(settings, ensure_instance(tmp_path / "home"), echo=lambda _: None).failed == {}
    sft = pl.read_parquet(settings.local_root / "published" / "sft_dataset" / "current" / "*.parquet")
    assert sft["sample_id"].to_list() == ["s-1"]
    assert [m["role"] for m in sft["messages"][0]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]


def test_the_run_output_names_each_skipped_input(tmp_path, capsys):
    from cowork_cli.cli import main

    (tmp_path / "raw" / "b").mkdir(parents=True)
    (tmp_path / "raw" / "b" / "x_retail.json").write_bytes(_tau2([_sim(0)]))
    (tmp_path / "raw" / "b" / "README.md").write_text("notes")
    (tmp_path / "raw" / "b" / "runs.json").write_bytes(b"[1, 2]")
    code = main(
        [
            "run",
            "--raw-root",
            str(tmp_path / "raw"),
            "--data-root",
            str(tmp_path / "out"),
            "--dagster-home",
            str(tmp_path / "home"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert (
        "skipped inputs (no format reads them): 2\n"
        "raw_file     reason\n"
        "-----------  ------------------------------------------------------------------------\n"
        "b/README.md  not JSON Lines (*.jsonl, *.jsonl.gz) or a JSON document any format reads\n"
        "b/runs.json  a JSON list of 2 items that no format reads\n"
    ) in out


SAMPLE = TESTS / "realdata"


@pytest.mark.parametrize(
    "batch, formats_read, runs",
    [
        ("tau2", {"tau2": 3}, 80),
        ("tau_bench", {"tau_bench": 1}, 30),
        ("coding", {"swe_agent": 1, "mini_swe_agent": 3, "openhands": 1, "atif": 2}, 9),
    ],
)
def test_the_shipped_real_sample_is_read_whole(batch, formats_read, runs, tmp_path):
    report = ingest_batch(SAMPLE, batch, tmp_path)
    assert (dict(report.formats), report.parsed, report.quarantined) == (formats_read, runs, 0)
    assert all(f.split("/")[1].startswith("LICENSE") for f, _ in report.skipped)


def test_each_auxiliary_format_is_listed_once_per_batch_however_many_runs_look_it_up(tmp_path, monkeypatch):
    """Reports, results, task metadata, stored messages and event files are looked up per run through one index
    per batch: a reader that went through every auxiliary file for each run would take time quadratic in the
    batch (hours for a storage folder of thousands of sessions)."""
    import shutil
    from collections import Counter

    from tests.conformance import test_agent_sessions as sessions
    from tests.conformance.summarize import HERE
    from tests.conformance.test_tool_versions import _runs

    listed, calls = formats.Batch.auxiliary, Counter()
    monkeypatch.setattr(formats.Batch, "auxiliary", lambda self, name: calls.update([name]) or listed(self, name))
    for fmt in ("mini_swe_agent", "atif"):  # SWE-bench reports beside runs; Harbor results beside trajectories
        shutil.copytree(HERE / fmt, tmp_path / fmt / "raw" / "b")
    for copy in ("a", "b", "c"):
        sessions.test_an_opencode_storage_folder_is_one_run_a_session_with_its_compactions(tmp_path / f"oc-{copy}")
        sessions.test_a_cline_task_folder_reads_xml_tool_uses_as_text_protocol_calls(tmp_path / f"cline-{copy}")
        target = tmp_path / "many" / "raw" / "b" / copy
        shutil.copytree(tmp_path / f"oc-{copy}" / "raw" / "b", target, dirs_exist_ok=True)
        shutil.copytree(tmp_path / f"cline-{copy}" / "raw" / "b", target, dirs_exist_ok=True)
    sessions.test_an_openhands_sdk_conversation_folder_is_one_run_its_event_files_in_index_order(tmp_path / "oh")
    shutil.copytree(tmp_path / "oh" / "raw" / "b", tmp_path / "many" / "raw" / "b" / "oh")
    read = {}
    for batch in ("mini_swe_agent", "atif", "many"):
        calls.clear()
        runs, _, _ = _runs(tmp_path / batch / "raw")
        read[batch] = (len(runs), dict(calls))
    assert read["mini_swe_agent"] == (6, {"swebench_report": 1})
    assert read["atif"] == (2, {"atif": 1, "harbor_result": 1})
    assert read["many"] == (3 * 2 + 3 + 2, {"opencode_storage": 1, "cline_task": 1, "openhands_event_file": 1})
