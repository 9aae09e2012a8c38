"""What harnesses write that a reader must not take at face value: a message logged while a call runs (Codex), one
file name in every run folder (SWE-agent), a step that only points at sub-trajectories (Harbor's ATIF), and the
warm-up exchange Claude Code starts each sub-agent with."""

from __future__ import annotations

import shutil

import orjson

from cowork_assets.ingest.formats._common import results_next_to_calls
from tests.conformance.test_more_formats import _read
from tests.conftest import TESTS

CORPUS = TESTS / "conformance"


def _call(cid: str) -> dict:
    return {"id": cid, "type": "function", "function": {"name": "shell", "arguments": "{}"}}


def test_a_calls_result_stays_next_to_it_and_what_was_logged_meanwhile_follows():
    messages = [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "", "tool_calls": [_call("a"), _call("b")]},
        {"role": "system", "content": "<environment_context> sandbox: workspace-write"},  # Codex's developer note
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "user", "content": "also check b"},
        {"role": "tool", "tool_call_id": "b", "content": "2"},
        {"role": "assistant", "content": "done", "tool_calls": [_call("c")]},  # c is never answered
        {"role": "user", "content": "stop"},
        {"role": "assistant", "content": "stopped"},
    ]
    assert [m.get("tool_call_id") or m["content"] for m in results_next_to_calls(messages)] == [
        "fix it",
        "",
        "a",
        "b",
        "<environment_context> sandbox: workspace-write",
        "also check b",
        "done",
        "stop",
        "stopped",
    ]


def test_two_runs_of_one_instance_in_two_run_folders_are_two_runs(tmp_path):
    traj = CORPUS / "swe_agent" / "v1.x" / "function_calling_simple.traj"
    for run in ("run-1", "run-2", "run-3"):
        (tmp_path / "raw" / "b" / run).mkdir(parents=True)
        shutil.copy(traj, tmp_path / "raw" / "b" / run / traj.name)
    runs, bad, _ = _read(tmp_path / "raw", "b")
    assert bad == []
    assert sorted(r["trajectory_id"] for r in runs) == [
        "function_calling_simple",
        "function_calling_simple@run-2/function_calling_simple.traj",
        "function_calling_simple@run-3/function_calling_simple.traj",
    ]


def test_a_step_that_only_points_at_sub_trajectories_is_no_message(tmp_path):
    parent = {
        "schema_version": "ATIF-v1.7",
        "session_id": "main",
        "agent": {"name": "terminus-2", "model_name": "m"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "Fix the failing test."},
            {
                "step_id": 2,
                "source": "agent",
                "message": "Running it.",
                "tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"cmd": "pytest"}}],
                "observation": {"results": [{"source_call_id": "c1", "content": "1 failed"}]},
            },
            {
                "step_id": 3,
                "source": "system",
                "message": "",
                "observation": {
                    "results": [
                        {"subagent_trajectory_ref": [{"session_id": "main-summary", "trajectory_path": "s.json"}]}
                    ]
                },
            },
            {"step_id": 4, "source": "agent", "message": "Fixed."},
        ],
    }
    (tmp_path / "raw" / "b").mkdir(parents=True)
    (tmp_path / "raw" / "b" / "main.trajectory.json").write_bytes(orjson.dumps(parent))
    (run,), bad, _ = _read(tmp_path / "raw", "b")
    assert bad == []
    assert [(m["role"], m.get("tool_call_id")) for m in run["messages"]] == [
        ("user", None),
        ("assistant", None),
        ("tool", "c1"),
        ("assistant", None),
    ]


def test_claude_codes_warm_up_exchange_is_not_a_run(tmp_path):
    def entry(i: int, role: str, content, parent: str | None) -> dict:
        message = {"role": role, "content": content}
        if role == "assistant":
            message |= {"id": f"msg_{i}", "model": "claude-sonnet-4-5"}
        return {
            "type": role,
            "uuid": f"u{i}",
            "parentUuid": parent,
            "isSidechain": True,
            "sessionId": "s-1",
            "agentId": "a1",
            "message": message,
        }

    warmup = [
        entry(1, "user", "Warmup", None),
        entry(2, "assistant", [{"type": "text", "text": "I'm ready to help you search the codebase."}], "u1"),
    ]
    (tmp_path / "raw" / "b").mkdir(parents=True)
    (tmp_path / "raw" / "b" / "agent-a1.jsonl").write_text("\n".join(orjson.dumps(e).decode() for e in warmup))
    real = CORPUS / "claude_code" / "spotter-2.1.38" / "spotter_short.jsonl"
    shutil.copy(real, tmp_path / "raw" / "b" / real.name)
    runs, bad, _ = _read(tmp_path / "raw", "b")
    assert runs and not any(m["content"] == "Warmup" for r in runs for m in r["messages"])  # the real session read
    assert bad == [
        (
            1,
            "bad_claude_code_record: the transcript holds only the harness's warm-up exchange (its `Warmup` prompt to "
            "a sub-agent), not a run",
        )
    ]
