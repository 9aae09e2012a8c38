"""The readers of the agent CLIs and extensions people keep sessions of — aider, Gemini CLI, Goose, Cline / Roo
Code, OpenCode, OpenHands V1 event logs — on shapes built here from each tool's own schema (its recording code):
the layouts and cases the conformance corpus has no real file of (rewinds, compressions, sub-agents, cancelled calls,
a quote in a reply, a tool use nested in a file's content)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from cowork_assets.ingest.batch import ingest_batch
from cowork_assets.ingest.formats import recount_batch, scan_batch
from cowork_assets.store.raw_files import too_large
from cowork_assets.warehouse import trace
from tests.conformance.test_tool_versions import _batch, _calls, _lines, _runs


def _roles(run: dict) -> list[str]:
    return [m["role"] for m in run["messages"]]


def _ingested(tmp_path: Path, raw: Path):
    report = ingest_batch(raw, "b", str(tmp_path / "data"))
    assert report.raw_records == recount_batch(raw, "b") == report.parsed + report.quarantined
    return report


# --- aider

# aider ends each line of its own ("> ") and of the user's ("#### ") with two spaces: written ⏎ here.
AIDER = """-*- mode: fundamental -*-

# aider chat started at 2025-03-01 10:00:00

> /usr/bin/aider --model deepseek/deepseek-reasoner⏎
> Aider v0.75.1⏎
> Main model: deepseek/deepseek-reasoner with diff edit format⏎
> Git repo: .git with 12 files⏎

#### /add app.py⏎
> Added app.py to the chat⏎

#### fix the off-by-one⏎
####   in the loop⏎

<thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>
The range stops early.
</thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>

> Note: this is a quote in the reply, not aider's output.

app.py
```python
<<<<<<< SEARCH
#### a comment that is not the user's
for i in range(n - 1):
=======
#### a comment that is not the user's
for i in range(n):
>>>>>>> REPLACE
```

> Tokens: 1.2k sent, 40 received.
Cost: $0.01 message, $0.01 session.⏎
> Applied edit to app.py⏎
> Commit a1b2c3d fix: loop bound⏎

#### /ask why did it fail?⏎

Because the range stopped one short.

> Tokens: 1.3k sent, 10 received.⏎

#### /run pytest⏎
> Add 0.1k tokens of command output to the chat? (Y)es/(N)o [Yes]: y⏎
> Added 3 lines of output to the chat.⏎

#### run the tests⏎

```bash
pytest -q
```

> Run shell command? (Y)es/(N)o [Yes]: y⏎
> Running pytest -q⏎

# aider chat started at 2025-03-01 11:00:00

> Aider v0.75.1⏎

#### /exit⏎
""".replace("⏎", "  ")


def test_aider_sessions_turns_and_text_protocol_actions(tmp_path):
    raw = _batch(tmp_path, {".aider.chat.history.md": AIDER.encode()})
    (run,), bad, notes = _runs(raw)
    assert bad == [] and run["trajectory_id"] == ".aider.chat.history@2025-03-01 10:00:00"
    assert (run["teacher"]["model"], run["task"]["category"]) == ("deepseek/deepseek-reasoner", "aider")
    assert run["task"]["request"] == "fix the off-by-one\n  in the loop"
    assert run["task"]["initial_state"] == {"repository": {"git_repo": ".git with 12 files"}}
    assert _roles(run) == ["user", "assistant", "tool", "user", "assistant", "user", "assistant", "tool"]
    edit, _, ask, answer, _, shell, ran = run["messages"][1:]
    assert edit["reasoning_content"] == "The range stops early."
    assert edit["content"].startswith("> Note: this is a quote in the reply")
    assert "#### a comment that is not the user's" in edit["content"]  # inside the fence: the reply's
    assert orjson.loads(edit["tool_calls"][0]["function"]["arguments"]) == {"files": ["app.py"]}
    assert run["messages"][2]["content"].splitlines()[-2:] == [
        "Applied edit to app.py",
        "Commit a1b2c3d fix: loop bound",
    ]
    assert (ask["content"], answer.get("tool_calls")) == ("why did it fail?", None)
    assert _calls([shell]) == ["bash"] and orjson.loads(shell["tool_calls"][0]["function"]["arguments"]) == {
        "command": "pytest -q"
    }
    assert ran["content"] == "Run shell command? (Y)es/(N)o [Yes]: y\nRunning pytest -q"
    assert dict(notes) == {
        "aider_text_before_the_first_session_not_read": 1,
        "aider_commands_not_messages": 3,  # /add, /run, /exit
        "aider_sessions_without_a_reply_left_out": 1,
    }
    assert recount_batch(raw, "b") == 1


def test_an_aider_whole_file_edit_is_the_call_aider_applied(tmp_path):
    history = """
# aider chat started at 2026-06-15 17:40:09

> Model: gemini/gemini-3.1-flash-lite with whole edit format⏎

#### write the timeline⏎

cases/timeline.json
```
[{"sequence": 1}]
```

> Tokens: 4.7k sent, 248 received. Cost: $0.0016 message, $0.0016 session.⏎
> Applied edit to cases/timeline.json⏎
""".replace("⏎", "  ")
    (run,), bad, _ = _runs(_batch(tmp_path, {".aider.chat.history.md": history.encode()}))
    assert bad == [] and _roles(run) == ["user", "assistant", "tool"]
    edit = run["messages"][1]["tool_calls"][0]["function"]
    assert (edit["name"], orjson.loads(edit["arguments"])) == ("edit", {"files": ["cases/timeline.json"]})


def test_an_aider_history_with_no_reply_is_quarantined_whole(tmp_path):
    raw = _batch(
        tmp_path, {".aider.chat.history.md": b"\n# aider chat started at 2025-01-01 00:00:00\n\n#### /exit  \n"}
    )
    runs, bad, _ = _runs(raw)
    assert runs == [] and bad == ["bad_aider_record: the chat history holds no session with a reply from the model"]


# --- Gemini CLI

CALL = {
    "id": "read_file-1",
    "name": "read_file",
    "args": {"absolute_path": "/w/a.py"},
    "result": [{"functionResponse": {"id": "read_file-1", "name": "read_file", "response": {"output": "print(1)"}}}],
    "status": "success",
    "timestamp": "2026-01-01T00:00:02Z",
}


def _gemini(mid: str, text: str, **extra) -> dict:
    return {
        "id": mid,
        "timestamp": "2026-01-01T00:00:01Z",
        "type": "gemini",
        "content": text,
        "model": "gemini-2.5-pro",
    } | extra


def _user(mid: str, text) -> dict:
    return {"id": mid, "timestamp": "2026-01-01T00:00:00Z", "type": "user", "content": text}


def test_a_gemini_cli_session_document_pairs_calls_with_their_responses(tmp_path):
    many = {
        **CALL,
        "id": "read_many_files-2",
        "name": "read_many_files",
        "result": [
            {"functionResponse": {"id": "read_many_files-2", "name": "read_many_files", "response": {"output": "ok"}}},
            {"text": "--- b.py ---\nB"},
        ],
    }
    cancelled = {**CALL, "id": "shell-3", "name": "run_shell_command", "result": None, "status": "cancelled"}
    thoughts = [{"subject": "Reading", "description": "the file first", "timestamp": "t"}]
    doc = {
        "sessionId": "s-1",
        "projectHash": "abc",
        "startTime": "2026-01-01T00:00:00Z",
        "lastUpdated": "2026-01-01T00:01:00Z",
        "messages": [
            _user("u1", "explain a.py"),
            {"id": "i1", "type": "info", "content": "Loaded cached credentials."},
            {"id": "x1", "type": "compression", "content": "a type of a later release"},
            _gemini("g1", "", toolCalls=[CALL, many, cancelled], thoughts=thoughts),
            _gemini("g2", "It prints 1."),
        ],
    }
    raw = _batch(tmp_path, {"chats/session-2026-01-01T00-00-s1.json": orjson.dumps(doc)})
    (run,), bad, notes = _runs(raw)
    assert bad == [] and (run["trajectory_id"], run["teacher"]["model"]) == ("s-1", "gemini-2.5-pro")
    assert _roles(run) == ["user", "assistant", "tool", "tool", "assistant"]
    turn = run["messages"][1]
    assert _calls([turn]) == ["read_file", "read_many_files", "run_shell_command"]
    assert turn["reasoning_content"] == "Reading\nthe file first"
    assert [m["content"] for m in run["messages"][2:4]] == ["print(1)", "ok\n--- b.py ---\nB"]
    assert notes == {
        "gemini_cli_messages_of_the_cli_not_conversation": 1,
        "gemini_cli_messages_of_type_compression_left_out": 1,
        "gemini_cli_calls_without_a_result": 1,
    }


def test_gemini_cli_jsonl_sessions_keep_the_last_write_rewinds_and_compressions(tmp_path):
    header = {"sessionId": "s-2", "projectHash": "abc", "startTime": "2026-01-01T00:00:00Z", "kind": "main"}
    summary = _user("sum", [{"text": "<state_snapshot>asked to explain a.py</state_snapshot>"}])
    lines = [
        header,
        _user("u1", [{"text": "explain a.py"}]),
        _gemini("g1", ""),
        _gemini("g1", [{"text": "Reading it.", "thought": False}], toolCalls=[CALL]),  # written again as it grew
        _user("u2", "wrong turn"),
        _gemini("g2", "abandoned"),
        {"$rewindTo": "u2"},
        {"$set": {"lastUpdated": "2026-01-01T00:02:00Z"}},
        {"$set": {"messages": [summary, _gemini("g3", "Ok.")]}},  # compressed: the model goes on from these
        _user("u3", "now b.py"),
        _gemini("g4", "b.py prints 2."),
    ]
    sub = [{"sessionId": "sub-1", "projectHash": "abc", "kind": "subagent"}, _user("x", "look"), _gemini("y", "seen")]
    raw = _batch(
        tmp_path,
        {"chats/session-2026-01-01T00-00-s2.jsonl": _lines(*lines), "chats/s-2/sub-1.jsonl": _lines(*sub)},
    )
    runs, bad, notes = _runs(raw)
    assert bad == [] and [r["trajectory_id"] for r in runs] == ["sub-1", "s-2", "s-2#2"]
    assert runs[0]["teacher"]["run_id"] == "subagent-of:s-2"
    first, second = runs[1], runs[2]
    assert _roles(first) == ["user", "assistant", "tool"] and first["messages"][1]["content"] == "Reading it."
    assert "abandoned" not in orjson.dumps(first).decode()
    assert [m["content"] for m in second["messages"]] == [
        "<state_snapshot>asked to explain a.py</state_snapshot>",
        "Ok.",
        "now b.py",
        "b.py prints 2.",
    ]
    assert {r["task"]["request"] for r in runs[1:]} == {"explain a.py"}
    assert notes["gemini_cli_compressions_split_into_contexts"] == 1 and recount_batch(raw, "b") == 2


def test_a_gemini_cli_call_recorded_both_as_a_record_and_as_api_parts_is_one_call(tmp_path):
    part = {"functionCall": {"id": "read_file-1", "name": "read_file", "args": {"absolute_path": "/w/a.py"}}}
    echo = {"functionResponse": {"id": "read_file-1", "name": "read_file", "response": {"output": "print(1)"}}}
    doc = {
        "sessionId": "s-3",
        "projectHash": "abc",
        "messages": [
            _user("u1", "explain a.py"),
            _gemini("g1", [part], toolCalls=[CALL]),
            _user("u2", [echo]),
            _gemini("g2", "It prints 1."),
        ],
    }
    (run,), bad, _ = _runs(_batch(tmp_path, {"session-s3.json": orjson.dumps(doc)}))
    assert bad == [] and _roles(run) == ["user", "assistant", "tool", "assistant"]
    assert _calls(run["messages"]) == ["read_file"]


def test_a_gemini_cli_checkpoint_is_the_api_conversation_it_saved(tmp_path):
    call = {"functionCall": {"id": "c1", "name": "list_directory", "args": {"path": "."}}}
    answer = {"functionResponse": {"id": "c1", "name": "list_directory", "response": {"output": "a.py"}}}
    saved = [
        {"role": "user", "parts": [{"text": "what is here?"}]},
        {"role": "model", "parts": [{"text": "Listing first.", "thought": True}, call]},
        {"role": "user", "parts": [answer]},
        {"role": "model", "parts": [{"text": "a.py"}]},
    ]
    raw = _batch(tmp_path, {"checkpoint-before-refactor.json": orjson.dumps(saved)})
    (run,), bad, _ = _runs(raw)
    assert bad == [] and run["trajectory_id"] == "checkpoint-before-refactor"
    assert _roles(run) == ["user", "assistant", "tool", "assistant"]
    assert (run["messages"][1]["reasoning_content"], run["messages"][2]["content"]) == ("Listing first.", "a.py")


# --- Goose


def _goose(role: str, *content: dict, **extra) -> dict:
    return {"role": role, "created": 1, "content": list(content)} | extra


REQUEST = {
    "type": "toolRequest",
    "id": "t1",
    "toolCall": {"status": "success", "value": {"name": "developer__shell", "arguments": {"command": "ls"}}},
}
RESPONSE = {
    "type": "toolResponse",
    "id": "t1",
    "toolResult": {"status": "success", "value": [{"type": "text", "text": "a.py"}]},
}


def test_a_goose_session_file_its_summary_and_its_export(tmp_path):
    session = [
        {"working_dir": "/w", "description": "list files", "message_count": 6},
        _goose("user", {"type": "text", "text": "what is here?"}),
        _goose("assistant", {"type": "thinking", "thinking": "list it", "signature": "s"}, REQUEST),
        _goose("user", RESPONSE),
        _goose("assistant", {"type": "text", "text": "a.py"}, metadata={"inference": {"resolvedModel": "gpt-4.1"}}),
        _goose("user", {"type": "text", "text": "hidden note"}, metadata={"agentVisible": False}),
        _goose("assistant", {"type": "summarizationRequested", "msg": "summarised"}),
        _goose("user", {"type": "text", "text": "go on"}),
        _goose("assistant", {"type": "text", "text": "done"}),
    ]
    export = {"id": "20260101_2", "working_dir": "/w", "conversation": session[1:5]}
    stream = [{"type": "message", "message": m} for m in session[1:5]] + [{"type": "complete", "total_tokens": 9}]
    raw = _batch(
        tmp_path,
        {
            "sessions/20260101_1.jsonl": _lines(*session),
            "export.json": orjson.dumps(export),
            "run.jsonl": _lines(*stream),
        },
    )
    runs, bad, notes = _runs(raw)
    assert bad == [] and [r["trajectory_id"] for r in runs] == ["20260101_2", "run", "20260101_1", "20260101_1#2"]
    first = runs[2]
    assert _roles(first) == ["user", "assistant", "tool", "assistant"] and first["teacher"]["model"] == "gpt-4.1"
    assert (first["messages"][1]["reasoning_content"], first["messages"][2]["content"]) == ("list it", "a.py")
    assert _calls(first["messages"]) == ["developer__shell"] and first["task"]["initial_state"] == {"working_dir": "/w"}
    assert [m["content"] for m in runs[3]["messages"]] == ["go on", "done"]
    assert notes == {"goose_messages_the_agent_never_saw": 1, "goose_summaries_split_into_contexts": 1}
    assert recount_batch(raw, "b") == 3


# Goose's `sessions.db` (schema version 5 of session_manager.rs): the columns it writes.
GOOSE_STORE = """
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user', working_dir TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    extension_data TEXT DEFAULT '{}', total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER,
    schedule_id TEXT, recipe_json TEXT, user_recipe_values_json TEXT);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
    content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL, timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    tokens INTEGER, metadata_json TEXT);
CREATE INDEX idx_messages_session ON messages(session_id);
"""


def test_a_part_of_unforeseen_shape_or_a_failing_detection_never_fails_the_batch(tmp_path, monkeypatch):
    """A goose stream whose part `type` is an object (detection looked types up in a set) is still goose's, its run one
    quarantined record; a format whose detection fails outright is passed over: the file is skipped with its reason."""
    from cowork_assets.ingest.formats import goose

    odd = _goose("assistant", {"type": {"kind": "text"}}, REQUEST)
    stream = [_goose("user", {"type": "text", "text": "what is here?"}), odd, _goose("user", RESPONSE)]
    raw = _batch(tmp_path, {"run.jsonl": _lines(*({"type": "message", "message": m} for m in stream))})
    sources = scan_batch(raw, "b")
    assert [sources.format_of(s).NAME for s in sources.files] == ["goose"]
    report = _ingested(tmp_path, raw)
    assert (report.raw_records, report.parsed, dict(report.reasons)) == (1, 0, {"bad_goose_record": 1})

    def failing(sample):
        raise TypeError("unhashable type: 'dict'")

    monkeypatch.setattr(goose, "detect", failing)
    sources = scan_batch(raw, "b")
    assert (sources.files, sources.skipped) == (
        [],
        [("b/run.jsonl", "JSON Lines of objects (message, type) that no format reads")],
    )


def _goose_store(db, sessions: dict[str, list[dict]], keep_open: bool = False):
    """A `sessions.db` holding these sessions (id -> messages), written as Goose writes it (WAL mode). With
    `keep_open`, the connection is returned still open and nothing checkpointed: the rows are in `-wal` only."""
    import sqlite3

    connection = sqlite3.connect(db)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA wal_autocheckpoint=0")
    connection.executescript(GOOSE_STORE)
    for ident, messages in sessions.items():
        connection.execute("INSERT INTO sessions (id, working_dir, session_type) VALUES (?, '/w', 'user')", (ident,))
        connection.executemany(
            "INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                (ident, m["role"], m["content"], 1, orjson.dumps(m.get("metadata", {})).decode())
                if isinstance(m["content"], str)
                else (ident, m["role"], orjson.dumps(m["content"]).decode(), 1, orjson.dumps(m.get("metadata", {})))
                for m in messages
            ],
        )
    connection.commit()
    if keep_open:
        return connection
    connection.close()


GOOSE_CONVERSATION = [
    _goose("user", {"type": "text", "text": "what is here?"}),
    _goose("assistant", {"type": "thinking", "thinking": "list it", "signature": "s"}, REQUEST),
    _goose("user", RESPONSE),
    _goose("assistant", {"type": "text", "text": "a.py"}, metadata={"inference": {"resolvedModel": "gpt-4.1"}}),
]


def test_a_goose_sessions_db_is_a_run_per_session_and_a_broken_one_is_quarantined_alone(tmp_path):
    """Goose 1.10 on keeps every session in one SQLite database: each session is a record, read as the JSON
    layouts are; an empty session and one whose content is not JSON are quarantined, each named, and the rest read."""
    (tmp_path / "raw" / "b").mkdir(parents=True)
    _goose_store(
        tmp_path / "raw" / "b" / "sessions.db",
        {
            "20260301_1": GOOSE_CONVERSATION,
            "20260301_2": [],  # made at start-up, never used
            "20260301_3": [{"role": "user", "content": "not json"}],
            "20260301_4": GOOSE_CONVERSATION[:2] + [_goose("system", {"type": "text", "text": "not Goose's"})],
        },
    )
    runs, bad, _ = _runs(tmp_path / "raw")
    assert [r["trajectory_id"] for r in runs] == ["20260301_1", "20260301_4"]
    first = runs[0]
    assert _roles(first) == ["user", "assistant", "tool", "assistant"] and first["teacher"]["model"] == "gpt-4.1"
    assert _calls(first["messages"]) == ["developer__shell"] and first["task"]["initial_state"] == {"working_dir": "/w"}
    assert _roles(runs[1]) == ["user", "assistant"]  # a row of another role is left out, as Goose reads it back
    assert bad == [
        "bad_goose_record: the session holds no turn of the model",
        "bad_goose_record: a field in it holds a value of another type or shape than the format writes",
    ]
    report = _ingested(tmp_path, tmp_path / "raw")
    assert (report.raw_records, report.parsed, report.quarantined) == (4, 2, 2)
    store = tmp_path / "raw" / "b" / "sessions.db"  # `trace` names a stored session by its place, not a line
    assert trace._line(tmp_path / "raw", "b/sessions.db", 4) == (
        f"(session 4 of the SQLite database {store}, in the order its sessions were made)"
    )


def test_a_goose_compaction_keeps_what_the_model_saw_before_it_as_its_own_context(tmp_path):
    """Goose compacts by hiding every earlier message from the model (`agentVisible: false`) and adding a summary
    only the model sees, with or without a notice of it: the hidden messages are the context the model had until
    then, so each compaction starts the next context and none is lost; a message hidden after the last compaction
    is one the model never got."""
    hidden, only_model = {"agentVisible": False}, {"userVisible": False}
    gone = {"agentVisible": False, "userVisible": False}  # only the model saw it, until the next compaction
    call = {**REQUEST, "id": "t2"}
    session = [
        _goose("user", {"type": "text", "text": "what is here?"}, metadata=hidden),
        _goose("assistant", REQUEST, metadata=hidden),
        _goose("user", RESPONSE, metadata=hidden),
        _goose("assistant", {"type": "text", "text": "a.py"}, metadata=hidden),
        _goose("user", {"type": "text", "text": "Summary: a.py is here."}, metadata=gone),
        _goose("assistant", {"type": "text", "text": "Carry on from the summary."}, metadata=gone),
        _goose("user", {"type": "text", "text": "count its lines"}, metadata=hidden),
        _goose("assistant", call, metadata=hidden),
        _goose("user", {**RESPONSE, "id": "t2"}, metadata=hidden),
        _goose("assistant", {"type": "conversationCompacted", "msg": "compacted"}, metadata=hidden),
        _goose("user", {"type": "text", "text": "Summary: a.py, 1 line."}, metadata=only_model),
        _goose("assistant", {"type": "text", "text": "Carry on."}, metadata=only_model),
        _goose("user", {"type": "text", "text": "and now?"}),
        _goose("assistant", {"type": "text", "text": "done"}),
        _goose("user", {"type": "text", "text": "a note for the user"}, metadata=hidden),
    ]
    (tmp_path / "raw" / "b").mkdir(parents=True)
    _goose_store(tmp_path / "raw" / "b" / "sessions.db", {"20260301_1": session})
    (tmp_path / "raw" / "b" / "20260301_2.jsonl").write_bytes(_lines({"working_dir": "/w"}, *session))
    runs, bad, notes = _runs(tmp_path / "raw")
    ids = ["20260301_2", "20260301_2#2", "20260301_2#3", "20260301_1", "20260301_1#2", "20260301_1#3"]
    assert bad == [] and [r["trajectory_id"] for r in runs] == ids  # the session file, then the database
    texts = [[m["content"] for m in r["messages"]] for r in runs[:3]]
    assert texts == [
        ["what is here?", None, "a.py", "a.py"],
        ["Summary: a.py is here.", "Carry on from the summary.", "count its lines", None, "a.py"],
        ["Summary: a.py, 1 line.", "Carry on.", "and now?", "done"],
    ]
    assert [_calls(r["messages"]) for r in runs[:3]] == [["developer__shell"], ["developer__shell"], []]
    assert [r["messages"] for r in runs[3:]] == [r["messages"] for r in runs[:3]]  # the database reads the same
    assert notes == {"goose_messages_the_agent_never_saw": 2, "goose_summaries_split_into_contexts": 4}


def test_a_damaged_page_of_a_sessions_db_quarantines_the_sessions_it_held_and_no_other(tmp_path):
    """A database with a damaged page (a disk error, a copy cut short) still reads every session it can: those whose
    rows were on that page are quarantined, each named, and every session is accounted for."""
    batch = tmp_path / "raw" / "b"
    batch.mkdir(parents=True)
    long = [_goose("user", {"type": "text", "text": "x" * 5000}), *GOOSE_CONVERSATION[1:]]
    _goose_store(batch / "sessions.db", {f"20260301_{i}": long for i in range(200)})
    data = bytearray((batch / "sessions.db").read_bytes())
    middle = len(data) // 2 // 4096 * 4096
    data[middle : middle + 4096] = b"\xff" * 4096
    (batch / "sessions.db").write_bytes(bytes(data))
    report = _ingested(tmp_path, tmp_path / "raw")
    _, bad, _ = _runs(tmp_path / "raw")
    assert report.raw_records == 200 and report.quarantined == len(bad) and 1 <= len(bad) <= 3
    assert {b.split(" (")[0] for b in bad} == {"bad_goose_record: its messages cannot be read"}


def test_a_stored_session_over_max_record_bytes_is_too_large_and_never_loaded(tmp_path):
    """A session store is not one record: each session is held to `max_record_bytes` by the size of its stored
    messages (a Goose session's `content_json`, an OpenCode session's `data` in whichever store), quarantined as
    `too_large` past it, and the other sessions are read."""
    import sqlite3

    raw = tmp_path / "raw"
    (raw / "b").mkdir(parents=True)
    long = [_goose("user", {"type": "text", "text": "x" * 50_000}), *GOOSE_CONVERSATION[1:]]
    _goose_store(raw / "b" / "sessions.db", {"20260301_1": GOOSE_CONVERSATION, "20260301_2": long})
    opencode = tmp_path / "opencode"
    test_an_opencode_db_is_a_run_per_session_read_as_the_storage_folder_is(opencode)
    shutil.copyfile(opencode / "raw" / "b" / "opencode.db", raw / "b" / "opencode.db")
    with sqlite3.connect(raw / "b" / "opencode.db") as db:  # each session's stored bytes, counted here
        rows = [*db.execute("SELECT session_id, data FROM part"), *db.execute("SELECT session_id, data FROM message")]
        rows += list(db.execute("SELECT session_id, data FROM session_message"))
    sizes = {}
    for session, data in rows:
        sizes[session] = sizes.get(session, 0) + len(data.encode())
    largest = max(sizes, key=sizes.get)
    limit = max(sizes.values()) - 1
    assert limit > max(v for k, v in sizes.items() if k != largest) and limit < 50_000
    sources = scan_batch(raw, "b", max_record_bytes=limit)
    found = [(s.rel, line.error) for s in sources.files for line in sources.records(s) if line.error]
    assert sorted(found) == [
        ("b/opencode.db", "bad_opencode_record: no message of the session's model is stored in the database"),
        ("b/opencode.db", too_large(limit)),
        ("b/sessions.db", too_large(limit)),
    ]
    assert recount_batch(raw, "b", max_record_bytes=limit) == 2 + 4


def test_a_goose_sessions_db_copied_while_goose_ran_is_read_with_its_write_ahead_log_and_left_untouched(tmp_path):
    """A store copied while Goose had it open: the sessions not yet checkpointed are in `sessions.db-wal` only. They
    are read, nothing is written beside the database (a new file would change the batch), and the log and
    SQLite's shared-memory file are named as read with the database."""
    live = tmp_path / "live" / "sessions.db"
    live.parent.mkdir()
    connection = _goose_store(live, {"20260301_1": GOOSE_CONVERSATION}, keep_open=True)
    batch = tmp_path / "raw" / "b"
    batch.mkdir(parents=True)
    for name in ("sessions.db", "sessions.db-wal", "sessions.db-shm"):
        shutil.copyfile(live.parent / name, batch / name)
    connection.close()
    before = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in batch.iterdir())
    runs, bad, _ = _runs(tmp_path / "raw")
    assert [r["trajectory_id"] for r in runs] == ["20260301_1"] and bad == []
    assert recount_batch(tmp_path / "raw", "b") == 1
    skipped = dict(scan_batch(tmp_path / "raw", "b").skipped)
    assert skipped == {
        f"b/sessions.db-{s}": "SQLite's own file beside the database sessions.db: read with it" for s in ("wal", "shm")
    }
    assert sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in batch.iterdir()) == before


# --- Cline / Roo Code


def _said(role: str, *texts: str) -> dict:
    """An Anthropic message of text blocks, as Cline keeps them."""
    return {"role": role, "content": [{"type": "text", "text": t} for t in texts]}


def test_a_cline_task_folder_reads_xml_tool_uses_as_text_protocol_calls(tmp_path):
    history = [
        _said("user", "<task>\nadd a test\n</task>", "<environment_details>x</environment_details>"),
        _said("assistant", "<thinking>look</thinking>\n<read_file>\n<path>a.py</path>\n</read_file>"),
        _said("user", "[read_file for 'a.py'] Result:", "print(1)"),
        {
            "role": "assistant",
            "content": "<write_to_file>\n<path>t.py</path>\n<content>\n<read_file><path>not-a-call</path></read_file>\n"
            "</content>\n</write_to_file>",
        },
        _said("user", "[write_to_file for 't.py'] Result:", "saved"),
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "attempt_completion", "input": {"result": "added"}}
            ],
        },
    ]
    metadata = {"model_usage": [{"ts": 1, "model_id": "claude-sonnet-4-5", "model_provider_id": "anthropic"}]}
    raw = _batch(
        tmp_path,
        {
            "tasks/1759400100000/api_conversation_history.json": orjson.dumps(history),
            "tasks/1759400100000/ui_messages.json": b"[]",
            "tasks/1759400100000/task_metadata.json": orjson.dumps(metadata),
        },
    )
    sources = scan_batch(raw, "b")
    assert sources.skipped == [] and [s.rel for s in sources.files] == [
        "b/tasks/1759400100000/api_conversation_history.json"
    ]
    (run,), bad, _ = _runs(raw)
    assert bad == [] and (run["trajectory_id"], run["teacher"]["model"]) == ("1759400100000", "claude-sonnet-4-5")
    assert run["task"]["request"] == "add a test"
    assert _roles(run) == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert _calls(run["messages"]) == ["read_file", "write_to_file", "attempt_completion"]
    written = orjson.loads(run["messages"][3]["tool_calls"][0]["function"]["arguments"])
    assert written == {"path": "t.py", "content": "<read_file><path>not-a-call</path></read_file>"}
    assert run["messages"][2]["content"] == "[read_file for 'a.py'] Result:\n\nprint(1)"


def test_a_cline_task_without_model_usage_takes_its_model_from_the_ui_messages(tmp_path):
    """Releases that write no `model_usage` record the model on the extension's own messages (`modelInfo`)."""
    history = [_said("user", "<task>\nsay hi\n</task>"), _said("assistant", "hi")]
    shown = [
        {"ts": 1, "type": "say", "say": "task", "text": "say hi"},
        {"ts": 2, "type": "say", "say": "api_req_started", "text": "{}", "modelInfo": {"modelId": "old-model"}},
        {
            "ts": 3,
            "type": "say",
            "say": "api_req_started",
            "text": "{}",
            "modelInfo": {"providerId": "x", "modelId": "m-2"},
        },
    ]
    files = {
        "tasks/1/api_conversation_history.json": orjson.dumps(history),
        "tasks/1/ui_messages.json": orjson.dumps(shown),
    }
    files |= {"tasks/2/api_conversation_history.json": orjson.dumps(history), "tasks/2/ui_messages.json": b"[]"}
    runs, bad, _ = _runs(_batch(tmp_path, files))
    assert bad == [] and [(r["trajectory_id"], r["teacher"]["model"]) for r in runs] == [("1", "m-2"), ("2", "unknown")]


def _use(call: str, path: str, **extra) -> dict:
    block = {"type": "tool_use", "id": call, "name": "read_file", "input": {"path": path}}
    return {"role": "assistant", "content": [block], **extra}


def _result(call: str, text: str, **extra) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": text}], **extra}


def test_a_roo_code_condense_ends_a_context_after_the_messages_it_kept(tmp_path):
    """Roo Code condenses without deleting: the messages it summarised are tagged, its summary (an assistant message
    that copies the calls whose results it kept) goes before the three messages it kept. The context before the
    condense is every message the model had, those three included; the next opens with the task and the summary
    as user messages, so each turn is trained once, in the context it was written in. A release that deleted what
    it summarised kept nothing after its summary."""
    x = {"condenseParent": "c-1"}
    summary_blocks = [
        {"type": "reasoning", "text": "Condensing conversation context."},
        {"type": "text", "text": "Summary: a.py and b.py were read."},
        {"type": "tool_use", "id": "t2", "name": "read_file", "input": {"path": "b.py"}},  # a copy, for its result
    ]
    history = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nread the files\n</task>"}], "ts": 1},
        _use("t1", "a.py", ts=2, **x),
        _result("t1", "A", ts=3, **x),
        _use("t2", "b.py", ts=4, **x),
        {"role": "assistant", "content": summary_blocks, "ts": 4, "isSummary": True, "condenseId": "c-1"},
        _result("t2", "B", ts=5),
        _use("t3", "c.py", ts=6),
        _result("t3", "C", ts=7),
        {"role": "assistant", "content": [{"type": "text", "text": "All three read."}], "ts": 9},
    ]
    deleted = [history[0], {**history[4], "ts": 8}, history[8]]  # an earlier release: the summarised ones gone
    unnamed = [history[0], {k: v for k, v in deleted[1].items() if k != "condenseId"}, history[8]]  # no id yet
    raw = _batch(
        tmp_path,
        {
            "tasks/1/api_conversation_history.json": orjson.dumps(history),
            "tasks/2/api_conversation_history.json": orjson.dumps(deleted),
            "tasks/3/api_conversation_history.json": orjson.dumps(unnamed),
        },
    )
    runs, bad, notes = _runs(raw)
    assert bad == [] and [r["trajectory_id"] for r in runs] == ["1", "1#2", "2", "3"]
    before, after, older, oldest = runs
    assert _roles(before) == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]
    assert _calls(before["messages"]) == ["read_file"] * 3 and [m["content"] for m in before["messages"][2::2]] == [
        "A",
        "B",
        "C",
    ]
    assert [(m["role"], m["content"]) for m in after["messages"]] == [
        ("user", "<task>\nread the files\n</task>"),
        ("user", "Summary: a.py and b.py were read."),
        ("assistant", "All three read."),
    ]
    turns = lambda run: [(m["role"], m["content"]) for m in run["messages"]]  # noqa: E731
    assert turns(older) == turns(oldest) == turns(after)
    assert {r["task"]["request"] for r in runs} == {"read the files"}
    assert notes["cline_condenses_split_into_contexts"] == 3


def test_a_sliding_window_truncation_ends_a_context_at_the_first_message_it_kept(tmp_path):
    """Roo Code hides what a truncation drops (`truncationParent`) and puts a marker the model reads before the first
    message it kept; Cline keeps the history whole and records the range it hid on its own messages, the message
    after the range holding the result of the last hidden call. Either way the context before the truncation is what
    came before it, the next opens with the task (and Roo Code's marker): each call is read once, next to its
    result. A range outside the history, or not a range, is no truncation."""
    hid = {"truncationParent": "tr-1"}
    marker = {"role": "user", "content": "[Sliding window truncation: 4 messages hidden to reduce context]"}
    task = {"role": "user", "content": [{"type": "text", "text": "<task>\nread the files\n</task>"}]}
    done = {"role": "assistant", "content": [{"type": "text", "text": "All three read."}]}
    roo = [task, _use("t1", "a.py", **hid), _result("t1", "A", **hid), _use("t2", "b.py", **hid)]
    roo += [_result("t2", "B", **hid), marker | {"isTruncationMarker": True, "truncationId": "tr-1"}]
    roo += [_use("t3", "c.py"), _result("t3", "C"), done]
    cline = [task, _use("t1", "a.py"), _result("t1", "A"), _use("t2", "b.py"), _result("t2", "B")]
    cline += [_use("t3", "c.py"), _result("t3", "C"), done]
    said = [
        {"ts": 1, "type": "say", "say": "task", "text": "read the files"},
        {"ts": 2, "type": "say", "say": "api_req_started", "conversationHistoryIndex": 4},
        {"ts": 3, "type": "say", "say": "api_req_started", "conversationHistoryIndex": 6},
        {"ts": 4, "type": "say", "say": "text", "conversationHistoryIndex": 7},
    ]
    ranged = [said[0], said[1]] + [m | {"conversationHistoryDeletedRange": [2, 3]} for m in said[2:]]
    off = [m | {"conversationHistoryDeletedRange": bad} for m, bad in zip(said, ([2, 7], [2], ["2", 3], [3, 2]))]
    as_reply = [m | {"role": "assistant"} if m.get("isTruncationMarker") else m for m in roo]  # an early shape
    files = {"tasks/roo/api_conversation_history.json": orjson.dumps(roo)}
    files |= {"tasks/roo-reply/api_conversation_history.json": orjson.dumps(as_reply)}
    for name, shown in (("cline", ranged), ("whole", off)):
        files |= {f"tasks/{name}/api_conversation_history.json": orjson.dumps(cline)}
        files |= {f"tasks/{name}/ui_messages.json": orjson.dumps(shown)}
    runs, bad, notes = _runs(_batch(tmp_path, files))
    ids = ["cline", "cline#2", "roo", "roo#2", "roo-reply", "roo-reply#2", "whole"]
    assert bad == [] and [r["trajectory_id"] for r in runs] == ids
    cline_before, cline_after, roo_before, roo_after, _, roo_reply_after, whole = runs
    assert roo_reply_after["messages"] == roo_after["messages"]
    for run in (cline_before, roo_before):
        assert _roles(run) == ["user", "assistant", "tool", "assistant", "tool"]
        assert [m["content"] for m in run["messages"][2::2]] == ["A", "B"]
    assert [(m["role"], m["content"]) for m in roo_after["messages"]] == [
        ("user", "<task>\nread the files\n</task>"),
        ("user", marker["content"]),
        ("assistant", ""),
        ("tool", "C"),
        ("assistant", "All three read."),
    ]
    assert _roles(cline_after) == ["user", "assistant", "tool", "assistant"]
    assert _calls(roo_after["messages"]) == _calls(cline_after["messages"]) == ["read_file"]
    assert _calls(whole["messages"]) == ["read_file"] * 3
    assert notes["cline_truncations_split_into_contexts"] == 3


# --- OpenCode


def _oc(kind: str, ident: str, **fields) -> bytes:
    return orjson.dumps({"id": ident, **fields})


def test_an_opencode_storage_folder_is_one_run_a_session_with_its_compactions(tmp_path):
    s = "ses_001"
    files = {
        f"storage/session/proj/{s}.json": _oc(
            "session", s, projectID="proj", directory="/w", title="t", time={"created": 1}
        ),
        f"storage/message/{s}/msg_001.json": _oc("m", "msg_001", sessionID=s, role="user", time={"created": 1}),
        "storage/part/msg_001/prt_001.json": _oc(
            "p", "prt_001", messageID="msg_001", sessionID=s, type="text", text="fix b.py"
        ),
        f"storage/message/{s}/msg_002.json": _oc(
            "m", "msg_002", sessionID=s, role="assistant", modelID="glm-4.6", providerID="zai"
        ),
        "storage/part/msg_002/prt_002.json": _oc("p", "prt_002", messageID="msg_002", type="step-start"),
        "storage/part/msg_002/prt_003.json": _oc("p", "prt_003", messageID="msg_002", type="reasoning", text="read it"),
        "storage/part/msg_002/prt_004.json": _oc(
            "p",
            "prt_004",
            messageID="msg_002",
            type="tool",
            callID="c1",
            tool="read",
            state={"status": "completed", "input": {"filePath": "b.py"}, "output": "B"},
        ),
        "storage/part/msg_002/prt_005.json": _oc(
            "p",
            "prt_005",
            messageID="msg_002",
            type="tool",
            callID="c2",
            tool="bash",
            state={"status": "running", "input": {"command": "x"}},
        ),
        f"storage/message/{s}/msg_003.json": _oc("m", "msg_003", sessionID=s, role="user"),
        "storage/part/msg_003/prt_006.json": _oc("p", "prt_006", messageID="msg_003", type="compaction"),
        "storage/part/msg_003/prt_007.json": _oc("p", "prt_007", messageID="msg_003", type="text", text="summarise"),
        f"storage/message/{s}/msg_004.json": _oc(
            "m", "msg_004", sessionID=s, role="assistant", modelID="glm-4.6", providerID="zai"
        ),
        "storage/part/msg_004/prt_008.json": _oc(
            "p", "prt_008", messageID="msg_004", type="text", text="Summary: b.py read."
        ),
    }
    raw = _batch(tmp_path, files)
    runs, bad, notes = _runs(raw)
    assert bad == [] and [r["trajectory_id"] for r in runs] == ["ses_001", "ses_001#2"]
    first, second = runs
    assert _roles(first) == ["user", "assistant", "tool"] and first["teacher"]["model"] == "zai/glm-4.6"
    assert first["messages"][1]["reasoning_content"] == "read it" and _calls(first["messages"]) == ["read", "bash"]
    assert [m["content"] for m in second["messages"]] == ["summarise", "Summary: b.py read."]
    assert first["task"]["request"] == "fix b.py" and notes["opencode_compactions_split_into_contexts"] == 1
    assert recount_batch(raw, "b") == 1 and scan_batch(raw, "b").skipped == []


# OpenCode's `opencode.db` (session.sql.ts): the tables and columns it writes.
OPENCODE_STORE = """
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT NOT NULL, time_created INTEGER, time_updated INTEGER);
CREATE TABLE session (
    id TEXT PRIMARY KEY, project_id TEXT NOT NULL REFERENCES project(id), workspace_id TEXT, parent_id TEXT,
    slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL, share_url TEXT,
    cost REAL NOT NULL DEFAULT 0, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
    time_compacting INTEGER, time_archived INTEGER);
CREATE TABLE message (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES session(id), time_created INTEGER NOT NULL,
    time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE part (
    id TEXT PRIMARY KEY, message_id TEXT NOT NULL REFERENCES message(id), session_id TEXT NOT NULL,
    time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE TABLE session_message (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES session(id), type TEXT NOT NULL, seq INTEGER NOT NULL,
    time_created INTEGER NOT NULL, data TEXT NOT NULL);
"""

# A session in the newer store only: `session_message` rows (packages/core/src/session-message.ts), in `seq` order.
GLM = {"id": "glm-4.6", "providerID": "zai"}
READ = {"status": "completed", "input": {"filePath": "d.py"}, "content": [{"type": "text", "text": "D"}]}
FAILED = {"status": "error", "input": {"command": "x"}, "content": [], "error": {"message": "no x"}}
PROJECTED = [
    ("user", {"text": "fix d.py", "files": [], "agents": [], "time": {"created": 1}}),
    ("agent-switched", {"agent": "build", "time": {"created": 1}}),
    (
        "assistant",
        {
            "agent": "build",
            "model": GLM,
            "content": [
                {"type": "reasoning", "id": "r1", "text": "read it first"},
                {"type": "text", "text": "Reading."},
                {
                    "type": "tool",
                    "id": "c1",
                    "name": "read",
                    "state": READ,
                    "time": {"created": 1},
                },
                {
                    "type": "tool",
                    "id": "c2",
                    "name": "bash",
                    "state": FAILED,
                    "time": {"created": 1},
                },
            ],
            "time": {"created": 2},
        },
    ),
    ("compaction", {"reason": "auto", "summary": "Read d.py; x is missing.", "time": {"created": 3}}),
    ("assistant", {"agent": "build", "model": GLM, "content": [{"type": "text", "text": "done"}], "time": {}}),
]


def test_an_opencode_db_is_a_run_per_session_read_as_the_storage_folder_is(tmp_path):
    """OpenCode 1.2 on keeps its sessions in `opencode.db`: messages and parts are rows whose `data` is their JSON
    without their ids. The storage folder's session, stored there, reads the same; a sub-agent's session names its
    parent; a session kept only in the newer `session_message` store reads as the parts its messages stand for, its
    compaction a new context; a session with no message of the model is quarantined alone."""
    import sqlite3

    folder = tmp_path / "folder"
    test_an_opencode_storage_folder_is_one_run_a_session_with_its_compactions(folder)
    expected, _, _ = _runs(folder / "raw")
    (tmp_path / "raw" / "b").mkdir(parents=True)
    connection = sqlite3.connect(tmp_path / "raw" / "b" / "opencode.db")
    connection.executescript(OPENCODE_STORE)
    connection.execute("INSERT INTO project VALUES ('proj', '/w', 1, 1)")
    sessions = [("ses_001", None), ("ses_002", None), ("ses_003", "ses_001"), ("ses_004", None)]
    for ident, parent in sessions:
        connection.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, "
            "time_updated) VALUES (?, 'proj', ?, 's', '/w', 't', '1.2.0', 1, 1)",
            (ident, parent),
        )
    storage = folder / "raw" / "b" / "storage"
    for path in sorted((storage / "message").rglob("*.json")) + sorted((storage / "part").rglob("*.json")):
        doc = orjson.loads(path.read_bytes())
        ident, owner = doc.pop("id"), doc.pop("messageID", None)
        session = doc.pop("sessionID", "ses_001")
        data = orjson.dumps(doc).decode()
        if owner is None:
            connection.execute("INSERT INTO message VALUES (?, ?, 1, 1, ?)", (ident, session, data))
        else:
            connection.execute("INSERT INTO part VALUES (?, ?, ?, 1, 1, ?)", (ident, owner, session, data))
    user = orjson.dumps({"role": "user", "time": {"created": 2}}).decode()
    assistant = orjson.dumps({"role": "assistant", "modelID": "glm-4.6", "providerID": "zai"}).decode()
    connection.execute("INSERT INTO message VALUES ('msg_101', 'ses_003', 2, 2, ?)", (user,))
    connection.execute("INSERT INTO message VALUES ('msg_102', 'ses_003', 2, 2, ?)", (assistant,))
    text = orjson.dumps({"type": "text", "text": "look at c.py"}).decode()
    reply = orjson.dumps({"type": "text", "text": "c.py is fine"}).decode()
    connection.execute("INSERT INTO part VALUES ('prt_101', 'msg_101', 'ses_003', 2, 2, ?)", (text,))
    connection.execute("INSERT INTO part VALUES ('prt_102', 'msg_102', 'ses_003', 2, 2, ?)", (reply,))
    for seq, (kind, data) in reversed(list(enumerate(PROJECTED))):  # written out of order: `seq` orders them
        row = (f"evt_{9 - seq}", kind, seq, orjson.dumps(data).decode())
        connection.execute("INSERT INTO session_message VALUES (?, 'ses_004', ?, ?, 1, ?)", row)
    connection.commit()
    connection.close()
    runs, bad, notes = _runs(tmp_path / "raw")
    assert [r["messages"] for r in runs[:2]] == [r["messages"] for r in expected]
    assert [r["trajectory_id"] for r in runs] == ["ses_001", "ses_001#2", "ses_003", "ses_004", "ses_004#2"]
    assert runs[2]["teacher"]["run_id"] == "subagent-of:ses_001" and _roles(runs[2]) == ["user", "assistant"]
    projected, summarised = runs[3:]
    assert _roles(projected) == ["user", "assistant", "tool", "tool"] and projected["teacher"]["model"] == "zai/glm-4.6"
    assert projected["messages"][1]["reasoning_content"] == "read it first" and _calls(projected["messages"]) == [
        "read",
        "bash",
    ]
    assert [m["content"] for m in projected["messages"][2:]] == ["D", "no x"]
    assert [m["content"] for m in summarised["messages"]] == ["Read d.py; x is missing.", "done"]
    assert bad == ["bad_opencode_record: no message of the session's model is stored in the database"]
    report = _ingested(tmp_path, tmp_path / "raw")
    assert (report.raw_records, report.quarantined) == (4, 1)


# --- OpenHands V1 events, one a line


def _action(i: str, call: str, response: str) -> dict:
    tool_call = {"id": call, "name": "terminal", "arguments": '{"command": "ls"}', "origin": "completion"}
    return {
        "id": i,
        "kind": "ActionEvent",
        "source": "agent",
        "thought": [{"type": "text", "text": "look"}],
        "tool_name": "terminal",
        "tool_call_id": call,
        "tool_call": tool_call,
        "llm_response_id": response,
    }


def _observation(i: str, call: str) -> dict:
    return {
        "id": i,
        "kind": "ObservationEvent",
        "source": "environment",
        "tool_name": "terminal",
        "tool_call_id": call,
        "observation": {"content": [{"type": "text", "text": "a.py"}]},
    }


V1_EVENTS = [
    {
        "id": "s",
        "kind": "SystemPromptEvent",
        "source": "agent",
        "system_prompt": {"type": "text", "text": "You are OpenHands."},
    },
    {
        "id": "u",
        "kind": "MessageEvent",
        "source": "user",
        "llm_message": {"role": "user", "content": [{"type": "text", "text": "list"}]},
    },
    {
        "id": "st",
        "kind": "ConversationStateUpdateEvent",
        "source": "environment",
        "key": "stats",
        "value": {"usage_to_metrics": {"default": {"model_name": "litellm_proxy/gpt-5"}}},
    },
    _action("a1", "c1", "r1"),
    _observation("o1", "c1"),
    _observation("o9", "gone"),  # a call the log does not hold: what the agent saw
    {
        "id": "k",
        "kind": "Condensation",
        "source": "environment",
        "forgotten_event_ids": ["a1", "o1"],
        "summary": "listed a.py",
        "llm_response_id": "r",
    },
    _action("a2", "c2", "r2"),
    _observation("o2", "c2"),
]


def test_openhands_v1_events_a_line_are_one_run_and_a_condensation_starts_a_context(tmp_path):
    events = V1_EVENTS
    raw = _batch(tmp_path, {"conversations/conv-1/events.jsonl": _lines(*events)})
    runs, bad, notes = _runs(raw)
    assert bad == [] and [r["trajectory_id"] for r in runs] == ["conv-1", "conv-1#2"]
    assert [r["teacher"]["model"] for r in runs] == ["litellm_proxy/gpt-5"] * 2
    assert _roles(runs[0]) == ["system", "user", "assistant", "tool", "user"]
    assert _roles(runs[1]) == ["system", "user", "user", "assistant", "tool"]
    assert runs[1]["messages"][2]["content"] == "listed a.py" and {r["task"]["request"] for r in runs} == {"list"}
    assert notes["openhands_condensations_split_into_contexts"] == 1 and recount_batch(raw, "b") == 1


def test_an_openhands_sdk_conversation_folder_is_one_run_its_event_files_in_index_order(tmp_path):
    """The SDK persists a conversation as `base_state.json` and one file an event: read as the same events written
    one a line, in the order of the files' indexes (not of their names' ids), the model the state's agent's. A
    conversation one of whose event files does not parse is quarantined whole, not read without it."""
    state = {
        "id": "3f1c9a",
        "agent": {"kind": "Agent", "llm": {"model": "anthropic/claude-sonnet-4-5"}, "tools": []},
        "workspace": {"kind": "LocalWorkspace", "working_dir": "/w"},
        "execution_status": "finished",
    }
    files = {}
    for name in ("3f1c9a", "77aa00"):
        files[f"conversations/{name}/base_state.json"] = orjson.dumps(state | {"id": name})
        for i, event in enumerate(V1_EVENTS):  # ids that sort otherwise than the indexes
            files[f"conversations/{name}/events/event-{i:05d}-{9 - i}{event['id']}.json"] = orjson.dumps(event)
    files["conversations/77aa00/events/event-00003-6a1.json"] = b'{"kind": "ActionEv'  # cut short
    raw = _batch(tmp_path, files)
    expected, _, _ = _runs(_batch(tmp_path / "lines", {"conversations/3f1c9a/events.jsonl": _lines(*V1_EVENTS)}))
    runs, bad, _ = _runs(raw)
    assert [r["trajectory_id"] for r in runs] == ["3f1c9a", "3f1c9a#2"]
    assert [r["messages"] for r in runs] == [r["messages"] for r in expected]
    assert {r["teacher"]["model"] for r in runs} == {"anthropic/claude-sonnet-4-5"}
    assert bad == ["bad_openhands_events_record: its event file event-00003-6a1.json is not a JSON object"]
    assert scan_batch(raw, "b").skipped == [] and recount_batch(raw, "b") == 2


def test_every_new_reader_accounts_for_its_records_through_ingest(tmp_path):
    """One batch with a file of each: every record parsed or quarantined, none lost."""
    raw = _batch(
        tmp_path,
        {
            ".aider.chat.history.md": AIDER.encode(),
            "gemini.json": orjson.dumps(
                {"sessionId": "g", "projectHash": "h", "messages": [_user("u", "hi"), _gemini("a", "hello")]}
            ),
            "goose.jsonl": _lines(
                {"working_dir": "/w"},
                _goose("user", {"type": "text", "text": "hi"}),
                _goose("assistant", REQUEST),
                _goose("user", RESPONSE),
            ),
            "broken-gemini.jsonl": _lines({"sessionId": "x", "projectHash": "h"}) + b"{not json\n",
        },
    )
    report = _ingested(tmp_path, raw)
    assert (report.parsed, report.quarantined) == (3, 1)
    assert report.reasons == {"bad_gemini_cli_record": 1}
