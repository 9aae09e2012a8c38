"""The logs people run today, read from the shared real samples (skipped without them) and from records built
here: OpenHands V1 events, a bare OpenHands event list, outputs keyed by question_id, Inspect AI eval logs,
tau2 leaderboard submissions; detection that never guesses; reasons in words."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import polars as pl
import pytest

from cowork_assets.ingest import recount
from cowork_assets.ingest.formats import inspect_ai, scan_batch
from tests.conftest import SHARED, TESTS

REAL = SHARED / "realdata"
needs_shared = pytest.mark.skipif(not (REAL / "coding_more").is_dir(), reason="../shared/realdata is absent")
PYTHON_ERRORS = ("unhashable", "has no attribute", "NoneType", "not subscriptable", "Error", "object is not", "'int'")


def _read(raw: Path, batch: str) -> tuple[list[dict], list[tuple[int, str]], list]:
    sources = scan_batch(raw, batch)
    runs, bad = [], []
    for sample in sources.files:
        for line in sources.records(sample):
            if line.error:
                bad.append((line.record, line.error))
            else:
                runs.append(orjson.loads(line.data))
    return runs, bad, sources.skipped


def _batch(tmp_path: Path, *files: Path, name: str = "b") -> Path:
    (tmp_path / "raw" / name).mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copy(f, tmp_path / "raw" / name / f.name)
    return tmp_path / "raw"


def _answered(messages: list[dict]) -> bool:
    """Every tool result answers a call made before it."""
    made = set()
    for m in messages:
        made |= {c["id"] for c in m.get("tool_calls") or []}
        if m["role"] == "tool" and m["tool_call_id"] not in made:
            return False
    return True


@needs_shared
def test_openhands_v1_events_become_calls_and_results(tmp_path):
    raw = _batch(tmp_path, REAL / "coding_more" / "ohbench_openagentsafety_gpt4o_output.jsonl")
    runs, bad, skipped = _read(raw, "b")
    assert (len(runs), bad, skipped) == (2, [], [])
    assert [r["task"]["task_id"] for r in runs] == ["safety-misconfig", "safety-business-intelligence"]
    for r in runs:
        messages = r["messages"]
        assert messages[0] == {"role": "user", "content": r["task"]["request"]}  # the instruction, first
        assert [m["role"] for m in messages[1:]] == ["assistant", "tool"] * 9 and _answered(messages)
        assert "grade" not in r  # final_score {total: 0}: no verdict, ungraded rather than failed
        assert r["teacher"]["model"] == "litellm_proxy/neulab/gpt-4o-2024-08-06"
    assert runs[0]["messages"][-2]["tool_calls"][0]["function"]["name"] == "finish"  # the other ran out of steps
    assert runs[0]["messages"][2]["content"].startswith("\x1b[?2004lDavid: Hi there")


@needs_shared
def test_a_bare_openhands_event_list_is_one_run(tmp_path):
    raw = _batch(tmp_path, REAL / "coding_more" / "harbor_rfc_openhands_trajectory_events.json")
    (run,), bad, skipped = _read(raw, "b")
    assert (bad, skipped) == ([], [])
    assert [m["role"] for m in run["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert run["messages"][1]["content"].startswith('Create a file called hello.txt with "Hello, world!"')
    assert run["messages"][3]["content"].startswith("Created /app/hello.txt")  # linked by cause, not by id order
    assert _answered(run["messages"]) and run["task"]["task_id"].startswith("openhands-")


@needs_shared
def test_a_bare_openhands_event_list_whose_request_is_not_text_is_one_quarantined_record(tmp_path):
    events = orjson.loads((REAL / "coding_more" / "harbor_rfc_openhands_trajectory_events.json").read_bytes())
    events[1]["args"]["content"] = events[1]["message"] = 12345  # the user's request, a number
    (tmp_path / "raw" / "b").mkdir(parents=True)
    (tmp_path / "raw" / "b" / "events.json").write_bytes(orjson.dumps(events))
    assert _read(tmp_path / "raw", "b") == (
        [],
        [(1, "bad_openhands_record: a field in it holds a value of another type or shape than the format writes")],
        [],
    )


def test_an_output_keyed_by_question_id_is_openhands_and_graded_by_correct(tmp_path):
    history = [
        {"id": 1, "source": "user", "action": "message", "args": {"content": "What is 6 x 7?"}},
        {"id": 2, "source": "agent", "action": "finish", "args": {"final_thought": "42"}},
    ]
    (tmp_path / "raw" / "b").mkdir(parents=True)
    lines = [
        {"question_id": f"q{i}", "instruction": "What is 6 x 7?", "history": history, "correct": i == 0} for i in (0, 1)
    ]
    (tmp_path / "raw" / "b" / "output.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    runs, bad, _ = _read(tmp_path / "raw", "b")
    assert bad == [] and [(r["task"]["task_id"], r["grade"]["passed"]) for r in runs] == [("q0", True), ("q1", False)]
    assert [m["content"] for m in runs[0]["messages"]] == ["What is 6 x 7?", "42"]


@needs_shared
def test_an_inspect_eval_log_sample_is_a_trajectory_graded_from_its_scores(tmp_path):
    raw = _batch(tmp_path, REAL / "inspect_ai" / "inspect_log_images_gpt4o.json")
    (run,), bad, skipped = _read(raw, "b")
    assert (bad, skipped) == ([], [])
    assert run["trajectory_id"] == "4hZVSqgqbdNBk7pFLr5RWq:1:1" and run["task"]["task_id"] == "images:1"
    assert [m["role"] for m in run["messages"]] == ["system", "user", "assistant"]
    assert run["messages"][1]["content"] == "What is this a picture of?"  # the image part left out
    assert run["grade"] == {"score": 0.0, "passed": False, "checks": {"scores.match": False}}  # "I"
    assert run["teacher"]["model"] == "openai/gpt-4o"


@pytest.mark.parametrize(
    ("value", "score"),
    [
        ("C", 1.0),
        ("I", 0.0),
        ("P", 0.5),
        ("N", 0.0),
        (True, 1.0),
        (0.25, 0.25),
        ({"a": 1, "b": "I"}, 0.5),
        (3, None),
        ("maybe", None),
        (None, None),
    ],
)
def test_inspect_scores_map_to_a_grade_as_documented(value, score):
    assert inspect_ai.score_of(value) == score
    graded = inspect_ai.grade({"s": {"value": value}})
    assert (graded and graded["score"]) == (score if score is not None else None)


def test_inspect_tool_calls_and_results_keep_their_pairing(tmp_path):
    sample = {
        "id": 7,
        "epoch": 2,
        "scores": {"includes": {"value": "C"}},
        "messages": [
            {"role": "user", "content": "list the files"},
            {
                "role": "assistant",
                "content": [{"type": "reasoning", "reasoning": "hidden"}, {"type": "text", "text": "ok"}],
                "tool_calls": [{"id": "c1", "function": "bash", "arguments": {"cmd": "ls"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "", "error": {"type": "timeout", "message": "timed out"}},
            {"role": "assistant", "content": "the listing timed out"},
        ],
    }
    log = {
        "version": 2,
        "status": "success",
        "eval": {"task": "files", "model": "m", "run_id": "r"},
        "samples": [sample],
    }
    (tmp_path / "raw" / "b").mkdir(parents=True)
    (tmp_path / "raw" / "b" / "log.json").write_bytes(orjson.dumps(log))
    (run,), bad, _ = _read(tmp_path / "raw", "b")
    assert bad == [] and run["trajectory_id"] == "r:7:2" and run["grade"]["passed"] is True
    assert run["messages"][1]["content"] == "ok"  # reasoning is not trained on as text
    assert run["messages"][1]["tool_calls"][0]["function"] == {"name": "bash", "arguments": '{"cmd":"ls"}'}
    assert run["messages"][2] == {"role": "tool", "content": "timed out", "tool_call_id": "c1"}


@needs_shared
@pytest.mark.parametrize("wrapped", [False, True])
def test_a_tau2_leaderboard_submission_rebuilds_checks_from_reward_info(tmp_path, wrapped):
    source = REAL / "tau2_variants" / "lb_adaptive-agent_medical_claude-opus-4-6_1trial.json"
    (tmp_path / "raw" / "b").mkdir(parents=True)
    sims = orjson.loads(source.read_bytes())
    doc = (
        {"domain": "medical", "agent": "adaptive", "model": "claude-opus-4-6", "simulations": sims} if wrapped else sims
    )
    (tmp_path / "raw" / "b" / ("submission.json" if wrapped else source.name)).write_bytes(orjson.dumps(doc))
    runs, bad, skipped = _read(tmp_path / "raw", "b")
    assert (len(runs), bad, skipped) == (64, [], [])
    assert all(r["grade"]["passed"] and r["task"]["category"] == "tau2_medical" for r in runs)
    first = runs[0]
    assert [c["type"] for c in first["task"]["checks"]] == ["db_match"] + ["nl_assertion"] * 4
    assert first["grade"]["checks"] == {"db": True, "nl_0": True, "nl_1": True, "nl_2": True, "nl_3": True}
    assert first["messages"][0]["content"].startswith("# Medical Triage Agent Policy")  # the simulation's policy
    assert first["task"]["request"].startswith("Hi, I'd like to schedule an appointment")
    assert first["teacher"]["model"] == ("claude-opus-4-6" if wrapped else "unknown")


def test_jsonl_no_format_reads_is_skipped_not_quarantined_line_by_line(tmp_path):
    (tmp_path / "raw" / "b").mkdir(parents=True)
    bfcl = [{"id": f"multi_turn_base_{i}", "result": [[["cd(folder='x')"]]]} for i in range(200)]
    (tmp_path / "raw" / "b" / "bfcl.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in bfcl))
    (tmp_path / "raw" / "b" / "other.jsonl").write_bytes(b'{"prompt": "p", "completion": "c"}\n' * 5)
    garbage = b"not json\n" + b'{"schema": "cowork.trajectory/v1"}\n'  # damage first: still the native format
    (tmp_path / "raw" / "b" / "native.jsonl").write_bytes(garbage)
    sources = scan_batch(tmp_path / "raw", "b")
    reasons = dict(sources.skipped)
    assert reasons["b/bfcl.jsonl"].startswith(
        "BFCL results ({id, result}): the model's answers without the tool outputs"
    )
    assert reasons["b/other.jsonl"] == "JSON Lines of objects (completion, prompt) that no format reads"
    assert [(s.rel, sources.format_of(s).NAME) for s in sources.files] == [("b/native.jsonl", "cowork")]


def test_every_quarantine_reason_is_in_the_records_own_terms(tmp_path):
    """Malformed records of each format read here: the detail says what is wrong, never a Python error."""
    (tmp_path / "raw" / "b").mkdir(parents=True)
    openhands = [
        {"instance_id": "a", "history": [{"kind": "ActionEvent", "id": "x", "action": {}}]},  # no tool call
        {"instance_id": "b", "history": [{"kind": "ObservationEvent", "observation": {"kind": "K"}}, 5]},
        {"instance_id": "c", "history": [[{"action": "run", "args": 3}, {}]]},
        {"instance_id": {"not": "a string"}, "history": [{"action": {"kind": "odd"}, "source": "agent"}]},
    ]
    (tmp_path / "raw" / "b" / "output.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in openhands))
    log = {"version": 2, "eval": {"task": "t"}, "samples": [{"id": 1}, {"id": 2, "messages": [{"role": "robot"}]}, 3]}
    (tmp_path / "raw" / "b" / "log.json").write_bytes(orjson.dumps(log))
    sims = [{"task_id": "1", "messages": [{"role": "assistant", "tool_calls": [{"id": 1}]}]}, {"task_id": "2"}]
    (tmp_path / "raw" / "b" / "sims.json").write_bytes(orjson.dumps(sims))
    with_tasks = {"tasks": [], "simulations": [{"task_id": "9", "messages": []}]}
    (tmp_path / "raw" / "b" / "tau2.json").write_bytes(orjson.dumps(with_tasks))
    atif = {"schema_version": "ATIF-v1.5", "steps": [{"source": "robot"}, {"tool_calls": [{}]}]}
    (tmp_path / "raw" / "b" / "atif.json").write_bytes(orjson.dumps(atif))
    runs, bad, skipped = _read(tmp_path / "raw", "b")
    details = [d for _, d in bad]
    assert (len(details), skipped) == (11, []), details  # 1 ATIF, 3 Inspect, 4 OpenHands, 3 tau2
    assert not [d for d in details if any(e in d for e in PYTHON_ERRORS)], details
    assert "bad_openhands_record: history event 0 (an ActionEvent) names no tool call" in details
    assert "bad_tau2_record: simulation 1 is of task '9', not among the file's tasks" in details
    assert "bad_tau2_record: simulation 2 has no task_id or no messages list" in details
    assert "bad_atif_record: step 0 has no source ATIF writes (system, user, agent)" in details
    assert "bad_openhands_record: history event 1 is not an event object" in details
    assert "bad_inspect_sample: sample 1 has no messages list" in details


@needs_shared
def test_the_new_formats_reach_the_sft_dataset(tmp_path):
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    raw = _batch(
        tmp_path,
        REAL / "coding_more" / "ohbench_openagentsafety_gpt4o_output.jsonl",
        REAL / "coding_more" / "harbor_rfc_openhands_trajectory_events.json",
        REAL / "tau2_variants" / "lb_adaptive-agent_medical_claude-opus-4-6_1trial.json",
    )
    log = orjson.loads((REAL / "inspect_ai" / "inspect_log_images_gpt4o.json").read_bytes())
    log["samples"][0]["scores"]["match"]["value"] = "C"  # graded passing
    (raw / "b" / "inspect.json").write_bytes(orjson.dumps(log))
    settings = CurateSettings(raw_root=str(raw), data_root=str(tmp_path / "out"), accept_ungraded=True)
    outcome = materialize_all(settings, ensure_instance(tmp_path / "home"), echo=lambda _: None)
    assert outcome.failed == {} and not [c for c in outcome.failed_checks if "records_accounted_for" in c]
    tables = tmp_path / "out" / "tables"
    runs = pl.read_parquet(tables / "trajectories" / "batch=b" / "data.parquet")
    assert runs.group_by("category").len().sort("category").rows() == [
        ("inspect_ai", 1),
        ("openhands", 3),
        ("tau2_medical", 64),
    ]
    assert pl.read_parquet(tables / "quarantine" / "batch=b" / "data.parquet").height == 0
    sft = pl.read_parquet(tmp_path / "out" / "published" / "sft_dataset" / "current" / "*.parquet")
    reached = set(sft["sample_id"])
    assert {
        "ohbench_openagentsafety_gpt4o_output:safety-misconfig",
        "ohbench_openagentsafety_gpt4o_output:safety-business-intelligence",
        "4hZVSqgqbdNBk7pFLr5RWq:1:1",
    } <= reached
    assert sum(s.startswith("lb_adaptive-agent") for s in reached) > 0


def test_the_independent_recount_counts_the_new_documents_as_ingest_reads_them(tmp_path):
    from cowork_assets.ingest.formats import record_rules

    events = [{"id": i, "source": "agent", "action": "run"} for i in range(7)]
    inspect = {"version": 2, "eval": {"task": "t"}, "samples": [{"id": 1}, {"id": 2}, {"id": 3}]}
    leaderboard = [{"task_id": str(i), "messages": [], "reward_info": {"reward": 1}} for i in range(4)]
    (tmp_path / "raw" / "b").mkdir(parents=True)
    for name, doc in [("events", events), ("inspect", inspect), ("lb", leaderboard)]:
        (tmp_path / "raw" / "b" / f"{name}.json").write_bytes(orjson.dumps(doc))
    sources = scan_batch(tmp_path / "raw", "b")
    counted = {path.stem: recount.count(path, rule) for path, rule in record_rules(sources)}
    assert counted == {"events": 1, "inspect": 3, "lb": 4}
    read = {s.path.stem: sum(1 for _ in sources.records(s)) for s in sources.files}
    assert read == counted


ATIF = TESTS / "realdata" / "coding"


@pytest.mark.parametrize(
    ("result", "grade"),
    [
        ({"verifier_result": {"rewards": {"reward": 1.0}}}, {"score": 1.0, "passed": True}),
        ({"verifier_result": {"rewards": {"reward": 0.0}}}, {"score": 0.0, "passed": False}),
        ({"verifier_result": None}, None),  # never verified
        ({"verifier_result": {"rewards": {"reward": 1.0}}, "exception_info": {"exception_type": "Timeout"}}, None),
    ],
)
def test_a_harbor_result_beside_an_atif_trajectory_grades_it(tmp_path, result, grade):
    trajectory = ATIF / "harbor_golden_openhands_hello-world.trajectory.json"
    raw = _batch(tmp_path, trajectory, ATIF / "harbor_golden_terminus2_hello-world-invalid-json.trajectory.json")
    paired = raw / "b" / "harbor_golden_openhands_hello-world.result.json"
    paired.write_bytes(orjson.dumps({"task_name": "hello-world", "trial_name": "hello-world__x1", **result}))
    runs, bad, skipped = _read(raw, "b")
    assert (bad, skipped) == ([], [])
    by_file = {r["trajectory_id"].split("@")[-1]: r for r in runs}
    graded = [r for r in runs if r["task"]["task_id"] == "hello-world"]
    assert len(graded) == 1 and len(by_file) == 2
    assert ({k: graded[0]["grade"][k] for k in ("score", "passed")} if "grade" in graded[0] else None) == grade
    other = [r for r in runs if r is not graded[0]]
    assert "grade" not in other[0]  # the Terminus-2 trajectory has no result of its own

    from cowork_assets.ingest.formats import recount_batch

    assert recount_batch(raw, "b") == 2  # the result is no record of its own


TRANSCRIPTS = TESTS / "transcripts"


def test_a_claude_code_transcript_is_its_main_chain(tmp_path):
    raw = _batch(tmp_path, TRANSCRIPTS / "claude_code" / "session.jsonl")
    sources = scan_batch(raw, "b")
    (sample,) = sources.files
    assert sources.format_of(sample).NAME == "claude_code"
    (line,) = list(sources.records(sample))
    run = orjson.loads(line.data)
    # the sidechain entry is a sub-agent's request with no answer: no run of its own
    assert sources.batch.notes["claude_code_conversations_without_an_assistant_turn_left_out"] == 1
    assert [m["role"] for m in run["messages"]] == ["user", "assistant", "tool", "assistant"]
    request, call, result, answer = run["messages"]
    assert request["content"].startswith("Oh, I just found out that this is not supported by Chrome")
    assert call["content"] is None  # its thinking is its reasoning, not its text
    assert call["reasoning_content"].startswith("The user is asking me to:")
    assert call["tool_calls"][0]["id"] == result["tool_call_id"] == "toolu_01T1SrbUgaSJkHWJd5outNgr"
    assert orjson.loads(call["tool_calls"][0]["function"]["arguments"])["command"].startswith("cp /Users/dain")
    assert answer["content"].startswith("I'll help you rewrite this to use proper HTML ruby elements")
    assert run["trajectory_id"] == "b25638d7-b104-4f06-a797-70ac33d069ed" and "grade" not in run
    assert run["teacher"]["model"] == "claude-opus-4-1-20250805"  # the first assistant entry's model
    assert [t["name"] for t in run["task"]["tools"]] == ["Bash"]

    from cowork_assets.ingest.formats import recount_batch

    assert recount_batch(raw, "b") == 1  # a transcript is one record, as ingest reads it


def test_a_claude_code_transcript_with_a_broken_line_is_quarantined_naming_it(tmp_path):
    lines = (TRANSCRIPTS / "claude_code" / "session.jsonl").read_bytes().splitlines()
    (tmp_path / "raw" / "b").mkdir(parents=True)
    (tmp_path / "raw" / "b" / "s.jsonl").write_bytes(b"\n".join([*lines[:3], b"{not json", *lines[3:]]) + b"\n")
    runs, bad, _ = _read(tmp_path / "raw", "b")
    assert runs == [] and bad == [(1, "bad_claude_code_record: line 4 is not JSON")]


def test_a_codex_rollout_is_one_trajectory_of_its_response_items(tmp_path):
    raw = _batch(tmp_path, TRANSCRIPTS / "codex" / "rollout.jsonl")
    (run,), bad, skipped = _read(raw, "b")
    assert (bad, skipped) == ([], [])
    assert run["trajectory_id"] == "11111111-1111-4111-8111-111111111111" and "grade" not in run
    assert run["teacher"]["model"] == "synthetic-model"  # from turn_context
    # the environment context, the event_msg copy of the request and the reasoning are not conversation
    assert [m["role"] for m in run["messages"]] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert run["messages"][0]["content"] == "List the synthetic files."
    assert run["messages"][1]["tool_calls"][0]["function"] == {
        "name": "exec_command",
        "arguments": '{"cmd":"find . -maxdepth 1 -type f"}',
    }
    assert run["messages"][2] == {
        "role": "tool",
        "tool_call_id": "call-structured-001",
        "content": "./alpha.txt\n./beta.txt",
    }
    assert orjson.loads(run["messages"][3]["tool_calls"][0]["function"]["arguments"])["input"].startswith(
        "const result"
    )
    assert _answered(run["messages"])

    from cowork_assets.ingest.formats import recount_batch

    assert recount_batch(raw, "b") == 1


def test_an_atif_sub_trajectory_names_its_parent_and_its_copied_context_is_context(tmp_path):
    """A context-summarization sub-run: its own trajectory, linked to the run that refers to it."""
    ask = {"source": "user", "message": "Fix the failing test."}
    parent = {
        "schema_version": "ATIF-v1.7",
        "session_id": "main-run",
        "agent": {"name": "terminus-2", "model_name": "m"},
        "steps": [
            ask,
            {
                "source": "agent",
                "message": "Looking.",
                "tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"command": "pytest"}}],
                "observation": {"results": [{"source_call_id": "c1", "content": "1 failed"}]},
            },
            {
                "source": "agent",
                "message": "The context is long; summarizing.",
                "observation": {
                    "results": [
                        {
                            "content": "summary done",
                            "subagent_trajectory_ref": [
                                {"session_id": "main-run-summary", "trajectory_path": "agent/summary.trajectory.json"}
                            ],
                        }
                    ]
                },
            },
        ],
    }
    child = {
        "schema_version": "ATIF-v1.7",
        "session_id": "main-run-summary",
        "agent": {"name": "terminus-2", "model_name": "m"},
        "steps": [
            {**ask, "is_copied_context": True},
            {"source": "agent", "message": "Looking.", "is_copied_context": True},
            {"source": "user", "message": "Summarize the work so far."},
            {"source": "agent", "message": "pytest shows 1 failure."},
        ],
    }
    (tmp_path / "raw" / "b").mkdir(parents=True)
    (tmp_path / "raw" / "b" / "main.trajectory.json").write_bytes(orjson.dumps(parent))
    (tmp_path / "raw" / "b" / "summary.trajectory.json").write_bytes(orjson.dumps(child))
    runs, bad, _ = _read(tmp_path / "raw", "b")
    assert bad == [] and [r["trajectory_id"] for r in runs] == ["main-run", "main-run-summary"]
    main, summary = runs
    assert main["teacher"]["run_id"] is None and summary["teacher"]["run_id"] == "subagent-of:main-run"
    assert summary["messages"] == [
        {"role": "user", "content": "Fix the failing test.\n\nLooking."},  # the copied context, as context
        {"role": "user", "content": "Summarize the work so far."},
        {"role": "assistant", "content": "pytest shows 1 failure."},
    ]


def test_the_other_formats_say_what_is_wrong_in_words_too(tmp_path):
    (tmp_path / "raw" / "b").mkdir(parents=True)
    files = {
        "chat.jsonl": b'{"messages": [{"role": "user", "content": "hi"}]}\n{"messages": [1, 2]}\n',
        "results-retail.json": orjson.dumps(
            [{"task_id": 1, "traj": 5, "info": {}}, {"task_id": 2, "traj": [], "info": 3}]
        ),
        "run.traj": orjson.dumps({"trajectory": [], "history": [7], "info": {}}),
        "mini.traj.json": orjson.dumps(
            {"trajectory_format": "mini-swe-agent-1.1", "info": {"exit_status": "x"}, "messages": 4}
        ),
        "session.jsonl": b'{"type": "user", "sessionId": "s", "uuid": "u", "message": {"role": "user"}}\n[1]\n',
        "rollout-x.jsonl": b'{"type": "session_meta", "payload": {"id": "x"}}\n'
        b'{"type": "response_item", "payload": {"type": "message", "role": "robot", "content": []}}\n',
    }
    for name, data in files.items():
        (tmp_path / "raw" / "b" / name).write_bytes(data)
    _, bad, skipped = _read(tmp_path / "raw", "b")
    details = [d for _, d in bad]
    assert skipped == [] and len(details) == 7, details  # the tau-bench file has two runs
    assert not [d for d in details if any(e in d for e in PYTHON_ERRORS)], details
    assert "bad_claude_code_record: line 2 is not a JSON object" in details
    assert "bad_codex_record: response item 0 is a message with no role Codex writes" in details
