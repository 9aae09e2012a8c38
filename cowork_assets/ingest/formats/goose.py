"""Goose sessions (Block's agent): the session store of `~/.local/share/goose/sessions/`, `sessions.db` (SQLite,
the releases since it replaced the session files: a `sessions` row each, its `messages` rows in the order written),
a session file of releases before it (JSON Lines: a first line of the session's metadata, `{working_dir, description,
message_count, ...}`, then one message a line), a session exported as JSON (`goose session export`: `{id,
working_dir, ..., conversation: [...]}`), or `goose run`'s `--output-format stream-json` (`{"type": "message",
"message": {...}}` lines among its other events). A session is one run.

A message is `{role, created, content: [...]}` (Goose's Rust `Message`; a `messages` row holds it as `role`,
`created_timestamp`, `content_json` and `metadata_json`): `text`; `thinking` and
`redactedThinking` (reasoning, through the one reasoning home); `toolRequest` (`{id, toolCall: {status, value:
{name, arguments}}}`, a call; one whose `toolCall` failed to parse is still the call the model made, its arguments
as written); `toolResponse` (`{id, toolResult: {status, value}}`, the call's result: the text of its content, or
its error).

**Compaction**: Goose compacts a conversation by hiding every message so far from the model
(`metadata.agentVisible: false`) and adding a summary only the model is shown (`userVisible: false`), with or
without a notice (`summarizationRequested`, `conversationCompacted`, `contextLengthExceeded`). Each compaction
starts a new context, each its own trajectory (`<session>`, `<session>#2`, ...): the messages it hid are the
context the model had until then. A message hidden from the model otherwise (after the last compaction, or beside
messages it still had) is one it never got, and is left out. The model comes from the messages' `metadata` or the
session's, else `unknown`; the session has no grade: runs are ungraded."""

from __future__ import annotations

import sqlite3
from functools import partial

import orjson

from cowork_assets.ingest import reasoning, recount
from cowork_assets.ingest.formats import _common

NAME = "goose"
PRIORITY = 20
RECORDS = {"lines": recount.ONE, "document": recount.ONE, "database": recount.rows("sessions")}
# The tables and columns of `sessions.db` read (Goose's session_manager.rs; later releases add columns).
STORE = {"sessions": {"id", "working_dir"}, "messages": {"session_id", "role", "content_json"}}
CODING_CATEGORIES = (NAME,)  # its runs are coding-agent runs
# Content types only Goose writes (its `thinking` is Anthropic's too: not a sign of Goose on its own).
GOOSE_PARTS = frozenset({"toolRequest", "toolResponse", "redactedThinking", "frontendToolRequest"})
NEW_CONTEXT = frozenset({"summarizationRequested", "conversationCompacted", "contextLengthExceeded"})
METADATA_KEYS = ("working_dir", "message_count", "schedule_id", "total_tokens")


def _message(obj):
    """The message a line holds (a stream-json line wraps it), or None."""
    if isinstance(obj, dict) and obj.get("type") == "message" and isinstance(obj.get("message"), dict):
        obj = obj["message"]
    return obj if isinstance(obj, dict) and obj.get("role") and isinstance(obj.get("content"), list) else None


def _goose(message) -> bool:
    return any(
        isinstance(p, dict) and isinstance(p.get("type"), str) and p["type"] in GOOSE_PARTS | NEW_CONTEXT
        for p in message["content"]
    )


def detect(sample) -> bool:
    if sample.kind == "database":
        return sample.has_tables(STORE)
    if sample.is_lines:
        first = sample.first_objects()
        messages = [m for m in map(_message, first) if m]
        header = bool(first) and any(k in first[0] for k in METADATA_KEYS) and "role" not in first[0]
        events = all(_message(o) or "type" in o for o in first[header:])  # stream-json's other events have a type
        return bool(messages) and events and (header or any(map(_goose, messages)))
    doc = sample.document
    listed = doc.get("conversation") if isinstance(doc, dict) else None
    messages = [m for m in map(_message, _common.listing(listed)) if m]
    return any(map(_goose, messages))


def _result_text(result) -> str:
    """A `toolResult` as text: its content's text (MCP content items), else its error."""
    if not isinstance(result, dict):
        return ""
    value = result.get("value")
    if isinstance(value, dict):  # newer Goose: a CallToolResult, {content, isError}
        value = value.get("content")
    if isinstance(value, list):
        return "\n".join(
            str(c.get("text") or c.get("resource", {}).get("text") or "") for c in value if isinstance(c, dict)
        )
    return str(result.get("error") or value or "")


def _visible(message: dict, to: str) -> bool:
    return (message.get("metadata") or {}).get(to) is not False


def _segments(messages: list[dict]) -> list[list[int]]:
    """The messages' indexes, split where Goose compacted the conversation: at a notice of it (`NEW_CONTEXT`), or
    at a message only the model was shown (the summary) after messages the user saw that the model no longer does
    (a compaction hides every message before it from the model; each was in the model's context until then)."""
    out, start, hidden_since, user_seen_since = [[]], 0, True, False
    for i, m in enumerate(messages):
        notice = any(isinstance(p, dict) and p.get("type") in NEW_CONTEXT for p in m["content"])
        summary = not _visible(m, "userVisible") and i > start and hidden_since and user_seen_since
        if (notice or summary) and out[-1]:
            out.append([])
            start, hidden_since, user_seen_since = i, True, False
        out[-1].append(i)
        hidden_since = hidden_since and not _visible(m, "agentVisible")
        user_seen_since = user_seen_since or _visible(m, "userVisible")
    return out


def contexts(messages: list[dict], notes) -> list[list[dict]]:
    segments = _segments(messages)
    out: list[list[dict]] = []
    for n, segment in enumerate(segments):
        # Hidden by a later compaction: every message of the segment is (the model had them all until it). Else a
        # message hidden from the model is one it never got.
        compacted = n < len(segments) - 1 and not any(_visible(messages[i], "agentVisible") for i in segment)
        if n and out[-1]:
            notes["goose_summaries_split_into_contexts"] += 1
        out.append([])
        for i in segment:
            m = messages[i]
            if not compacted and not _visible(m, "agentVisible"):
                notes["goose_messages_the_agent_never_saw"] += 1
                continue
            out[-1].extend(_turn(m["role"], [p for p in m["content"] if isinstance(p, dict)]))
    return out


def _turn(role: str, parts: list[dict]) -> list[dict]:
    if role == "assistant":
        text, found = reasoning.assistant_turn({}, [p for p in parts if p.get("type") in ("text", "thinking")])
        calls = []
        for p in parts:
            if p.get("type") in ("toolRequest", "frontendToolRequest"):
                call = p.get("toolCall") or {}
                value = call.get("value") if isinstance(call.get("value"), dict) else call
                calls.append(_common.call(str(p["id"]), str(value.get("name")), value.get("arguments")))
        if not (text or found or calls):
            return []  # a notice only (a summary was asked for), no turn of the model
        message = {"role": "assistant", "content": text or None, "reasoning_content": found}
        return [message | ({"tool_calls": calls} if calls else {})]
    out = [
        {"role": "tool", "tool_call_id": str(p["id"]), "content": _result_text(p.get("toolResult"))}
        for p in parts
        if p.get("type") == "toolResponse"
    ]
    if text := _common.text([p for p in parts if p.get("type") == "text"]):
        out.append({"role": "user", "content": text})
    return out


def convert(lines: list, sample, batch) -> list[dict]:
    header = lines[0] if lines and _message(lines[0]) is None and isinstance(lines[0], dict) else {}
    messages = [m for m in map(_message, lines) if m]
    runs = [c for c in contexts(messages, batch.notes) if any(m["role"] == "assistant" for m in c)]
    if not runs:
        raise _common.Malformed("the session holds no turn of the model")
    meta = [m.get("metadata") or {} for m in messages]
    model = next((str(x) for m in meta for x in _models(m)), None) or next(_models(header), "unknown")
    session = str(header.get("id") or sample.path.name.split(".")[0])
    request = _common.first_user_text(runs[0])
    state = {"working_dir": header["working_dir"]} if header.get("working_dir") else {}
    task = {"task_id": _common.task_id_of(NAME, request), "category": NAME, "request": request, "initial_state": state}
    return _common.context_runs(session, task, model, runs, sample, batch)


def _models(meta: dict):
    """The model names a message's or session's metadata gives."""
    inference = _common.mapping(meta.get("inference"))
    config = _common.mapping(meta.get("model_config"))
    for found in (inference.get("resolvedModel"), inference.get("requestedModel"), config.get("model_name")):
        if isinstance(found, str) and found:
            yield found


def _stored_session(db, row: dict, sample, batch) -> list[dict]:
    """A `sessions.db` session: its row, then its `messages` rows in the order written (user and assistant ones, as
    Goose reads them back)."""
    header = {k.removesuffix("_json"): v for k, v in row.items()}
    for key in ("model_config", "extension_data"):  # JSON the session row keeps as text
        if isinstance(header.get(key), str):
            header[key] = orjson.loads(header[key] or "null")
    stored = db.execute("SELECT * FROM messages WHERE session_id = ? ORDER BY rowid", (row["id"],))
    messages = [_stored_message(r) for r in stored if r["role"] in ("user", "assistant")]
    return convert([header, *messages], sample, batch)


def _stored_bytes(db, row: dict) -> int:
    """The bytes of a session's stored messages (its record's size)."""
    found = "SELECT coalesce(sum(length(CAST(content_json AS BLOB))), 0) FROM messages WHERE session_id = ?"
    return db.execute(found, (row["id"],)).fetchone()[0]


def _stored_message(row: sqlite3.Row) -> dict:
    metadata = row["metadata_json"] if "metadata_json" in row.keys() else None
    return {
        "role": row["role"],
        "content": orjson.loads(row["content_json"]),
        "metadata": orjson.loads(metadata) if metadata else {},
    }


def records(sample, batch):
    if sample.kind == "database":
        build = partial(_stored_session, sample=sample, batch=batch)
        yield from _common.database_records(sample, "sessions", "bad_goose_record", build, _stored_bytes)
        return
    if sample.is_lines:
        yield from _common.session_records(sample, "bad_goose_record", lambda lines: convert(lines, sample, batch))
        return
    doc = sample.document
    header = {k: v for k, v in doc.items() if k != "conversation"}
    yield from _common.record_lines(
        1, lambda: convert([header, *doc["conversation"]], sample, batch), orjson.dumps(header), "bad_goose_record"
    )
