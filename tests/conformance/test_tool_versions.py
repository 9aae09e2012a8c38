"""The shapes of the tools' logs the conformance corpus has no real file of, built here from each tool's schema:
Codex's 2025 layouts, its compactions and its late-2026 layout, Claude Code's retried branches, sub-agents inside a
session and its own messages, mini-swe-agent's Responses API turns and text format errors, chat records that carry
their grade."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl

from cowork_assets.ingest.batch import accounted, ingest_batch
from cowork_assets.ingest.formats import recount_batch, scan_batch
from cowork_assets.store.registry import TABLES


def _batch(tmp_path: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (tmp_path / "raw" / "b" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "raw" / "b" / name).write_bytes(data)
    return tmp_path / "raw"


def _lines(*entries: dict) -> bytes:
    return b"".join(orjson.dumps(e) + b"\n" for e in entries)


def _runs(raw: Path) -> tuple[list[dict], list[str], dict]:
    sources = scan_batch(raw, "b")
    runs, bad = [], []
    for sample in sources.files:
        for line in sources.records(sample):
            (bad.append(line.error) if line.error else runs.append(orjson.loads(line.data)))
    return runs, bad, sources.batch.notes


def _calls(messages: list[dict]) -> list[str]:
    return [c["function"]["name"] for m in messages for c in m.get("tool_calls") or []]


# --- Codex


def _item(kind: str, **fields) -> dict:
    return {"type": kind, **fields}


def _say(role: str, text: str) -> dict:
    part = "output_text" if role == "assistant" else "input_text"
    return _item("message", role=role, content=[{"type": part, "text": text}])


CODEX_ITEMS = [
    _say("user", "<environment_context><cwd>/w</cwd></environment_context>"),
    _say("user", "fix the build"),
    _item("reasoning", summary=[{"type": "summary_text", "text": "look first"}], encrypted_content="x"),
    _say("assistant", "Looking at both files."),
    _item("function_call", name="shell", arguments='{"command": ["cat", "a"]}', call_id="c1"),
    _item("function_call", name="shell", arguments='{"command": ["cat", "b"]}', call_id="c2"),
    _item("function_call_output", call_id="c1", output='{"output": "A", "metadata": {"exit_code": 0}}'),
    _item("function_call_output", call_id="c2", output='{"output": "B", "metadata": {"exit_code": 0}}'),
    _item("web_search_call", status="completed", action={"type": "search", "query": "q"}),
    _say("assistant", "Both read."),
]


def test_a_codex_rollout_of_mid_2025_is_read_as_the_enveloped_one(tmp_path):
    """The bare header, `record_type` markers and bare items: one turn per model response, parallel calls in it."""
    header = {"id": "t-2025", "timestamp": "2025-08-20T13:20:47Z", "instructions": "You are Codex."}
    raw = _batch(tmp_path, {"rollout-2025-08-20-t-2025.jsonl": _lines(header, {"record_type": "state"}, *CODEX_ITEMS)})
    (run,), bad, notes = _runs(raw)
    assert bad == [] and run["trajectory_id"] == "t-2025"
    assert [m["role"] for m in run["messages"]] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    turn = run["messages"][2]
    assert (turn["content"], turn["reasoning_content"], _calls([turn])) == (
        "Looking at both files.",
        "look first",
        ["shell", "shell"],
    )
    assert [m["content"] for m in run["messages"] if m["role"] == "tool"] == ["A", "B"]  # the output, not the wrapper
    assert run["task"]["request"] == "fix the build" and notes["codex_web_search_calls_left_out"] == 1
    assert notes["codex_environment_context_left_out"] == 1


def test_a_typescript_codex_session_document_is_one_rollout(tmp_path):
    doc = {"session": {"id": "ts-1", "instructions": ""}, "items": CODEX_ITEMS}
    raw = _batch(tmp_path, {"rollout-2025-04-20-ts-1.json": orjson.dumps(doc)})
    (run,), bad, _ = _runs(raw)
    assert bad == [] and run["trajectory_id"] == "ts-1" and _calls(run["messages"]) == ["shell", "shell"]
    assert recount_batch(raw, "b") == 1


def _envelope(kind: str, payload: dict) -> dict:
    return {"timestamp": "2026-05-11T08:26:55Z", "type": kind, "payload": payload}


def test_a_codex_compaction_starts_a_segment_and_a_request_recorded_only_as_an_event_is_the_request(tmp_path):
    lines = [
        _envelope("session_meta", {"id": "t-1", "base_instructions": {"text": "You are Codex."}}),
        _envelope("event_msg", {"type": "user_message", "message": "rename the flag"}),
        _envelope("response_item", _item("function_call", name="shell", arguments="{}", call_id="c1")),
        _envelope("response_item", _item("function_call_output", call_id="c1", output="ok")),
        _envelope("compacted", {"message": "Summary: the flag is being renamed."}),
        _envelope("response_item", _item("function_call", name="shell", arguments="{}", call_id="c2")),
        _envelope("response_item", _item("function_call_output", call_id="c2", output="ok")),
        _envelope("response_item", _say("assistant", "Renamed.")),
    ]
    raw = _batch(tmp_path, {"rollout.jsonl": _lines(*lines)})
    runs, bad, notes = _runs(raw)
    assert bad == [] and [r["trajectory_id"] for r in runs] == ["t-1", "t-1#2"]
    first, second = (r["messages"] for r in runs)
    assert [m["role"] for m in first] == ["system", "user", "assistant", "tool"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "assistant"]
    assert second[1]["content"] == "Summary: the flag is being renamed."  # what the model saw after compacting
    assert {r["task"]["request"] for r in runs} == {"rename the flag"}
    assert notes["codex_requests_read_from_event_messages"] == 1


def test_a_codex_rollout_of_late_2026_reads_each_message_once_and_never_its_harness_context_as_the_request(tmp_path):
    """Codex 0.149 and later: numbered lines, each item written again as an `item_completed` event, usage lines, and
    the plugins on offer, AGENTS.md and the environment injected as one user message before the request."""

    def line(n: int, kind: str, payload: dict) -> dict:
        return {"timestamp": "2026-11-20T09:00:00Z", "ordinal": n, "type": kind, "payload": payload}

    def mirror(item: dict) -> dict:
        return {"type": "item_completed", "thread_id": "t-9", "turn_id": "u1", "item": item}

    plugins = "<recommended_plugins>\nHere is a list of plugins...\n- Google Drive (gdrive)\n</recommended_plugins>"
    context = [plugins, "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nrun tests\n</INSTRUCTIONS>"]
    injected = _item("message", role="user", content=[{"type": "input_text", "text": t} for t in context])
    items = [
        ("response_item", _say("developer", "<permissions instructions>\nsandboxed\n</permissions instructions>")),
        ("response_item", injected),
        ("response_item", _say("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")),
        ("response_item", {**_say("user", "fix the build"), "id": "msg_1"}),
        (
            "event_msg",
            mirror({"type": "UserMessage", "id": "u", "content": [{"type": "text", "text": "fix the build"}]}),
        ),
        (
            "response_item",
            _item("reasoning", summary=[{"type": "summary_text", "text": "look"}], encrypted_content="x"),
        ),
        ("event_msg", mirror({"type": "Reasoning", "id": "rs_1"})),
        ("response_item", _item("function_call", name="exec_command", arguments='{"cmd": "make"}', call_id="c1")),
        ("event_msg", mirror({"type": "CommandExecution", "id": "c1", "command": "make", "exit_code": 0})),
        ("response_item", _item("function_call_output", call_id="c1", output="built")),
        ("token_usage_record", {"session_id": "t-9", "usage": {"input_tokens": 10, "output_tokens": 5}}),
        ("response_item", {**_say("assistant", "Built."), "phase": "final_answer"}),
        ("event_msg", mirror({"type": "AgentMessage", "id": "msg_2", "content": [{"type": "Text", "text": "Built."}]})),
        ("event_msg", {"type": "task_complete", "turn_id": "u1"}),
    ]
    meta = {"id": "t-9", "originator": "codex-cli", "cli_version": "0.153.4", "base_instructions": {"text": "Codex."}}
    lines = [
        line(0, "session_meta", meta),
        line(1, "event_msg", {"type": "task_started", "turn_id": "u1"}),
        line(2, "turn_context", {"turn_id": "u1", "root_turn_id": "u1", "model": "gpt-5.6", "workspace_roots": ["/w"]}),
        *(line(n, kind, payload) for n, (kind, payload) in enumerate(items, 3)),
    ]
    raw = _batch(tmp_path, {"sessions/2026/11/20/rollout-2026-11-20T09-00-00-t-9.jsonl": _lines(*lines)})
    (run,), bad, notes = _runs(raw)
    assert bad == [] and run["trajectory_id"] == "t-9" and run["teacher"]["model"] == "gpt-5.6"
    assert [m["role"] for m in run["messages"]] == [
        "system",
        "system",
        "user",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert run["messages"][2]["content"] == "".join(context)  # kept as the model saw it, but not the request
    assert run["task"]["request"] == "fix the build"
    assert (_calls(run["messages"]), run["messages"][4]["reasoning_content"], run["messages"][-1]["content"]) == (
        ["exec_command"],
        "look",
        "Built.",
    )
    assert notes["codex_environment_context_left_out"] == 1


# --- Claude Code


def _entry(uuid: str, parent: str | None, kind: str, content, **more) -> dict:
    message = {"role": kind, "content": content}
    if kind == "assistant":
        message |= {"id": more.pop("mid", f"msg-{uuid}"), "model": more.pop("model", "claude-x")}
    return {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s1", "message": message, **more}


def _use(call_id: str) -> list[dict]:
    return [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "ls"}}]


def _result(call_id: str) -> list[dict]:
    return [{"type": "tool_result", "tool_use_id": call_id, "content": "a.txt"}]


def test_claude_code_reads_the_branch_that_was_kept_without_its_own_messages(tmp_path):
    entries = [
        {"type": "summary", "summary": "title", "leafUuid": "a3"},
        _entry("u1", None, "user", "list the files"),
        _entry("a1", "u1", "assistant", [{"type": "text", "text": "first try"}]),  # retried: a branch left behind
        _entry("a2", "u1", "assistant", _use("c1")),
        _entry("r1", "a2", "user", _result("c1")),
        _entry("e1", "r1", "assistant", [{"type": "text", "text": "API Error: overloaded"}], model="<synthetic>"),
        _entry("a3", "e1", "assistant", [{"type": "text", "text": "One file."}]),
    ]
    raw = _batch(tmp_path, {"s1.jsonl": _lines(*entries)})
    (run,), bad, notes = _runs(raw)
    assert bad == [] and [m.get("content") for m in run["messages"]] == ["list the files", None, "a.txt", "One file."]
    assert notes["claude_code_synthetic_messages_left_out"] == 1


def test_a_sub_agent_inside_a_session_is_a_run_naming_its_parent(tmp_path):
    """Claude Code 1.x wrote a `Task` sub-agent's entries into the session itself, as sidechains."""
    side = {"isSidechain": True, "agentId": "ag1"}
    entries = [
        _entry("u1", None, "user", "audit the repo"),
        _entry("a1", "u1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Task", "input": {"prompt": "p"}}]),
        _entry("s1", None, "user", "look for secrets", **side),
        _entry("s2", "s1", "assistant", _use("c1"), **side),
        _entry("s3", "s2", "user", _result("c1"), **side),
        _entry("s4", "s3", "assistant", [{"type": "text", "text": "none found"}], **side),
        _entry("r1", "a1", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "none found"}]),
        _entry("a2", "r1", "assistant", [{"type": "text", "text": "Clean."}]),
    ]
    raw = _batch(tmp_path, {"s1.jsonl": _lines(*entries)})
    runs, bad, _ = _runs(raw)
    assert bad == [] and [(r["trajectory_id"], r["teacher"]["run_id"]) for r in runs] == [
        ("s1", None),
        ("s1:agent-ag1", "subagent-of:s1"),
    ]
    assert runs[1]["task"]["request"] == "look for secrets" and _calls(runs[1]["messages"]) == ["Bash"]
    report = ingest_batch(raw, "b", str(tmp_path / "out"))
    assert (report.raw_records, report.parsed, report.quarantined) == (1, 1, 0)  # one record, two runs
    assert TABLES["trajectories"].rows(str(tmp_path / "out"), "b") == 2


def test_sub_agents_that_name_no_agent_id_are_told_apart_by_their_trees(tmp_path):
    side = {"isSidechain": True}
    entries = [
        _entry("u1", None, "user", "review both modules"),
        _entry("x1", None, "user", "review module a", **side),
        _entry("x2", "x1", "assistant", [{"type": "text", "text": "a is fine"}], **side),
        _entry("y1", None, "user", "review module b", **side),
        _entry("y2", "y1", "assistant", [{"type": "text", "text": "b is fine"}], **side),
        _entry("a1", "u1", "assistant", [{"type": "text", "text": "Both fine."}]),
    ]
    runs, bad, _ = _runs(_batch(tmp_path, {"s1.jsonl": _lines(*entries)}))
    assert bad == [] and [(r["trajectory_id"], r["task"]["request"]) for r in runs] == [
        ("s1", "review both modules"),
        ("s1:agent-x1", "review module a"),
        ("s1:agent-y1", "review module b"),
    ]


def test_a_record_one_of_whose_runs_is_quarantined_is_counted_once(tmp_path, monkeypatch):
    """A record's trajectory the contract rejects is quarantined; the record, parsed, still counts once."""
    from cowork_assets.ingest.formats import claude_code

    entries = [_entry("u1", None, "user", "go"), _entry("a1", "u1", "assistant", [{"type": "text", "text": "done"}])]
    raw = _batch(tmp_path, {"s1.jsonl": _lines(*entries)})
    real = claude_code.convert
    monkeypatch.setattr(claude_code, "convert", lambda *a: [*real(*a), {"schema": "cowork.trajectory/v1"}])
    report = ingest_batch(raw, "b", str(tmp_path / "out"))
    assert (report.raw_records, report.parsed, report.quarantined) == (1, 1, 0)
    assert report.reasons == {"missing_field": 1} and accounted(str(tmp_path / "out"), "b") == (1, 0)
    assert recount_batch(raw, "b") == 1


# --- mini-swe-agent


def test_mini_swe_agent_responses_turns_and_text_format_errors(tmp_path):
    responses = {
        "trajectory_format": "mini-swe-agent-1.1",
        "instance_id": "repo__pkg-1",
        "info": {"exit_status": "Submitted", "config": {"environment": {"image": "swebench/repo_pkg-1"}}},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Fix the bug."},
            {
                "object": "response",
                "output": [
                    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "check tests"}]},
                    {"type": "function_call", "call_id": "fc1", "name": "bash", "arguments": '{"command": "ls"}'},
                ],
            },
            {"type": "function_call_output", "call_id": "fc1", "output": "setup.py"},
            {"role": "exit", "content": "diff", "extra": {"exit_status": "Submitted"}},
        ],
    }
    text = [
        {"role": "system", "content": "Reply with one ```mswea_bash_command``` block."},
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "```mswea_bash_command\nls\n```\n```mswea_bash_command\npwd\n```"},
        {"role": "user", "content": "Format error: expected exactly 1 action, found 2."},
        {"role": "assistant", "content": "```mswea_bash_command\nls\n```", "extra": {"actions": [{"command": "ls"}]}},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>setup.py</output>"},
    ]
    raw = _batch(tmp_path, {"a.traj.json": orjson.dumps(responses), "b.traj.json": orjson.dumps(text)})
    (api, chat), bad, notes = _runs(raw)
    assert bad == [] and notes["mini_swe_agent_exit_messages_left_out"] == 1
    assert [m["role"] for m in api["messages"]] == ["system", "user", "assistant", "tool"]
    assert api["messages"][2]["reasoning_content"] == "check tests" and api["messages"][3]["content"] == "setup.py"
    assert api["task"]["initial_state"]["sandbox"]["image"] == "swebench/repo_pkg-1"
    assert [m["role"] for m in chat["messages"]] == ["system", "user", "assistant", "user", "assistant", "tool"]
    assert "sandbox" in chat["task"]["initial_state"] and "image" not in chat["task"]["initial_state"]["sandbox"]


# --- OpenAI chat records


def test_chat_records_carry_their_grade_and_a_coding_record_its_actions(tmp_path):
    swe_smith = {
        "instance_id": "pallets__flask.1234",
        "resolved": True,
        "repo": "pallets/flask",
        "messages": [
            {"role": "system", "content": "Use the tools."},
            {"role": "user", "content": "Fix the route bug."},
            {
                "role": "assistant",
                "content": "<function=bash>\n<parameter=command>grep -r route</parameter>\n</function>",
            },
            {"role": "user", "content": "OBSERVATION:\napp.py: route"},
            {"role": "assistant", "content": "<function=submit>\n</function>"},
        ],
    }
    chat = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], "score": 0.5}
    raw = _batch(tmp_path, {"runs.jsonl": _lines(swe_smith, chat)})
    (coding, plain), bad, _ = _runs(raw)
    assert bad == []
    assert (coding["task"]["task_id"], coding["task"]["category"], coding["grade"]["passed"]) == (
        "pallets__flask.1234",
        "coding_chat",
        True,
    )
    assert [m["role"] for m in coding["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert orjson.loads(coding["messages"][2]["tool_calls"][0]["function"]["arguments"]) == {"command": "grep -r route"}
    assert coding["task"]["initial_state"]["sandbox"]["repo"] == "pallets/flask"
    assert (plain["task"]["category"], plain["grade"]) == (
        "chat",
        {"score": 0.5, "passed": False, "checks": {"score": False}},
    )


def test_the_coding_budget_applies_to_every_category_a_format_declares_coding():
    from cowork_assets.ingest.formats import coding_categories
    from cowork_assets.settings import CurationSettings

    assert {"claude_code", "codex", "coding_chat", "mini_swe_agent", "swe_agent", "openhands", "atif"} <= set(
        coding_categories()
    )
    settings = CurationSettings(category_char_budgets={"coding": 100, "swe_agent": 7})
    budgets = settings.budgets(pl.Series(["chat", "codex", "swe_agent"]), coding_categories())
    assert budgets.select("category", "char_budget").rows() == [("chat", 40_000), ("codex", 100), ("swe_agent", 7)]


# --- Harness output trees


def test_reports_and_results_are_matched_to_runs_by_their_folders(tmp_path):
    """SWE-bench's unkeyed per-instance report names its instance by its folder; Harbor's trial result grades the
    ATIF trajectory under its trial folder, not another trial's."""
    run = {
        "trajectory_format": "mini-swe-agent-1.1",
        "instance_id": "repo__pkg-1",
        "info": {"exit_status": "Submitted"},
        "messages": [{"role": "user", "content": "Fix it."}, {"role": "assistant", "content": "Done."}],
    }
    step = {"step_id": 1, "source": "user", "message": "make hello.txt"}
    answer = {"step_id": 2, "source": "agent", "message": "done"}
    trial = {"schema_version": "ATIF-v1.6", "session_id": "", "agent": {"name": "terminus-2"}, "steps": [step, answer]}
    files = {
        "output/run/repo__pkg-1/repo__pkg-1.traj.json": orjson.dumps(run),
        "logs/run_evaluation/run/model/repo__pkg-1/report.json": orjson.dumps({"resolved": True, "tests_status": {}}),
        "jobs/j/hello__a/agent/trajectory.json": orjson.dumps({**trial, "session_id": "a"}),
        "jobs/j/hello__a/result.json": orjson.dumps(
            {"task_name": "hello", "verifier_result": {"rewards": {"reward": 1}}}
        ),
        "jobs/j/hello__b/agent/trajectory.json": orjson.dumps({**trial, "session_id": "b"}),
        "jobs/j/hello__b/result.json": orjson.dumps(
            {"task_name": "hello", "verifier_result": {"rewards": {"reward": 0}}}
        ),
    }
    runs, bad, _ = _runs(_batch(tmp_path, files))
    graded = {r["trajectory_id"]: (r["grade"]["passed"], *r["grade"]["checks"]) for r in runs}
    assert bad == [] and graded == {
        "a": (True, "verifier_result.reward"),
        "b": (False, "verifier_result.reward"),
        "repo__pkg-1": (True, "b/logs/run_evaluation/run/model/repo__pkg-1/report.json"),
    }


def test_an_openhands_resolver_output_is_a_run_of_its_issue_graded_by_its_success(tmp_path):
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "Fix issue #7: crash on empty input"}},
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "pytest"}, "message": "Running pytest"},
        {"id": 2, "source": "agent", "observation": "run", "cause": 1, "content": "1 failed"},
        {"id": 3, "source": "agent", "action": "finish", "args": {"final_thought": "Fixed."}},
    ]
    run = {
        "issue": {"owner": "acme", "repo": "tool", "number": 7, "title": "crash", "body": "..."},
        "issue_type": "issue",
        "instruction": "Fix issue #7",
        "base_commit": "abc123",
        "git_patch": "diff",
        "history": events,
        "success": True,
        "result_explanation": "the test passes",
    }
    (found,), bad, _ = _runs(_batch(tmp_path, {"output/output.jsonl": _lines(run)}))
    assert bad == [] and (found["task"]["task_id"], found["grade"]["passed"]) == ("acme/tool#7", True)
    assert found["task"]["initial_state"]["sandbox"] == {
        "repo": "acme/tool",
        "base_commit": "abc123",
        "instance_id": "acme/tool#7",
    }
    assert [m["role"] for m in found["messages"]] == ["user", "assistant", "tool", "assistant"]
