"""What the format modules share: building a `cowork.trajectory/v1` record and its parts."""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter
from collections.abc import Iterator
from functools import partial
from typing import Any

import orjson

from cowork_assets.ingest.reasoning import is_reasoning_part
from cowork_assets.store.raw_databases import open_database
from cowork_assets.store.raw_files import RawLine, too_large
from cowork_assets.text_actions import TEXT_ACTION, fenced_command, text_action  # noqa: F401 (readers use them here)

NO_PARAMETERS = {"type": "object", "properties": {}}
BASH_TOOL = {
    "name": "bash",
    "description": "run a shell command",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
EXCERPT_BYTES = 2000


def mapping(value: Any) -> dict:
    """`value` if it is a JSON object, else an empty one: a part of a log that has another type reads as absent."""
    return value if isinstance(value, dict) else {}


def listing(value: Any) -> list:
    """`value` if it is a JSON list, else an empty one (as `mapping`)."""
    return value if isinstance(value, list) else []


def text(content: Any) -> str | None:
    """Message content as text: a list of parts is joined (their `text`; reasoning parts are not text:
    `ingest/reasoning.py`), a string kept, anything else None."""
    if isinstance(content, list):
        return "".join(
            p.get("text", "") if isinstance(p, dict) else str(p) for p in content if not is_reasoning_part(p)
        )
    return content if isinstance(content, str) else None


def without_nulls(schema: Any, notes: Counter) -> Any:
    """A JSON Schema with null-valued keywords (`"enum": null`) dropped: JSON Schema has no null keyword,
    and producers write them for "not set". Each one dropped is counted in `notes`."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if value is None:
                notes["null_schema_keywords_dropped"] += 1
            else:
                out[key] = without_nulls(value, notes)
        return out
    if isinstance(schema, list):
        return [without_nulls(v, notes) for v in schema]
    return schema


def tool_definitions(tools: Any, notes: Counter) -> list[dict]:
    """OpenAI function schemas (or bare `{name, description, parameters}`) -> the task package's tool list."""
    out = []
    for t in listing(tools):
        f = t.get("function", t) if isinstance(t, dict) else None
        if isinstance(f, dict) and isinstance(f.get("name"), str):
            out.append(
                {
                    "name": f["name"],
                    "description": f.get("description") or "",
                    "parameters": without_nulls(f.get("parameters"), notes) or NO_PARAMETERS,
                }
            )
    return out


def called_tools(messages: list[dict], extra_names: list = ()) -> list[dict]:
    """Tool definitions with empty parameter schemas for every tool the messages call (when none are given)."""
    names = [
        c["function"].get("name")
        for m in messages
        if isinstance(m, dict)
        for c in m.get("tool_calls") or []
        if isinstance(c, dict) and isinstance(c.get("function"), dict)
    ]
    return [
        BASH_TOOL if n == BASH_TOOL["name"] else {"name": n, "description": "", "parameters": NO_PARAMETERS}
        for n in dict.fromkeys(n for n in [*names, *extra_names] if isinstance(n, str))
    ]


def call(call_id: str, name: str, arguments: Any) -> dict:
    """An OpenAI tool call; arguments given as an object become a JSON string."""
    args = (
        arguments if isinstance(arguments, str) else orjson.dumps(arguments if arguments is not None else {}).decode()
    )
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def answers(result: str, pending: list[dict]) -> tuple[list[dict], list[dict]]:
    """The tool messages one result turn makes for the calls waiting on it (formats whose results name no call id:
    ShareGPT, LLaMA-Factory), and the calls still waiting: a JSON list of one result per waiting call, for several,
    answers each; any other text answers the first."""
    try:
        parts = orjson.loads(result) if len(pending) > 1 else None
    except orjson.JSONDecodeError:
        parts = None
    if not (isinstance(parts, list) and len(parts) == len(pending)):
        parts = [result]
    texts = [p if isinstance(p, str) else orjson.dumps(p).decode() for p in parts]
    made = [
        {"role": "tool", "tool_call_id": c["id"], "name": c["function"]["name"], "content": t}
        for c, t in zip(pending, texts, strict=False)
    ]
    return made, pending[len(made) :]


def task_id_of(prefix: str, request: str) -> str:
    """A task id for formats without one: the request's hash."""
    return f"{prefix}-" + hashlib.sha256(request.encode()).hexdigest()[:12]


def request_task(category: str, messages: list[dict]) -> dict:
    """The task of a run whose log names none: its first request, hashed to the task id; the tools it calls."""
    request = first_user_text(messages)
    return {
        "task_id": task_id_of(category, request),
        "category": category,
        "request": request,
        "tools": called_tools(messages),
    }


def first_user_text(messages: list[dict]) -> str:
    return next((m["content"] for m in messages if m.get("role") == "user" and m.get("content")), "")


def unique_call_ids(messages: list[dict]) -> list[dict]:
    """Messages whose repeated tool-call ids are made unique (`id~2`, ...), each tool result answering the
    latest call with its id: harnesses that replay recorded runs reuse ids, and a result must answer one call."""
    latest: dict[str, str] = {}
    uses: dict[str, int] = {}
    out = []
    for m in messages:
        if not isinstance(m, dict):
            out.append(m)
            continue
        calls = m.get("tool_calls")
        if isinstance(calls, list) and any(isinstance(c, dict) and c.get("id") in uses for c in calls):
            calls = [dict(c) for c in calls]
        for c in calls or []:
            if isinstance(c, dict) and isinstance(c.get("id"), str):
                n = uses[c["id"]] = uses.get(c["id"], 0) + 1
                latest[c["id"]] = c["id"] = c["id"] if n == 1 else f"{c['id']}~{n}"
        if calls is not m.get("tool_calls"):
            m = {**m, "tool_calls": calls}
        if (
            m.get("role") == "tool"
            and m.get("tool_call_id") in latest
            and latest[m["tool_call_id"]] != m["tool_call_id"]
        ):
            m = {**m, "tool_call_id": latest[m["tool_call_id"]]}
        out.append(m)
    return out


def text_protocol(messages: list[dict], action_of=lambda m: text_action(m.get("content"))) -> list[dict]:
    """A text-protocol conversation (the action in the assistant's text, its output the next user turn) with each
    action a call and the user turn after it that call's result, so truncation and the evidence audit see
    observations as what they are. `action_of(message)` is an assistant turn's action, (name, arguments)."""
    out, pending = [], None
    for i, m in enumerate(messages):
        if m["role"] == "user" and pending:
            out.append(
                {"role": "tool", "tool_call_id": pending[0], "name": pending[1], "content": m.get("content") or ""}
            )
            pending = None
            continue
        message, pending = dict(m), None
        if m["role"] == "assistant" and not m.get("tool_calls") and (action := action_of(m)) is not None:
            pending = (f"call_{i}", action[0])
            message["tool_calls"] = [{**call(pending[0], *action), "type": TEXT_ACTION}]
        out.append(message)
    return out


def trajectory(
    trajectory_id: str,
    task: dict,
    model: str,
    messages: list[dict],
    grade: dict | None = None,
    role: str = "teacher",
    run_id: str | None = None,
    group_id: str | None = None,
) -> dict:
    task = {"initial_state": {}, "tools": [], "checks": [], **task}
    record = {
        "schema": "cowork.trajectory/v1",
        "trajectory_id": trajectory_id,
        "task": task,
        "teacher": {"model": model, "run_id": run_id, "role": role},
        "group_id": group_id or task["task_id"],
        "messages": results_next_to_calls(unique_call_ids(messages)),
    }
    if grade is not None:
        record["grade"] = grade
    return record


def context_runs(
    base: str, task: dict, model: str, contexts: list[list[dict]], sample, batch, parent: str | None = None
) -> list[dict]:
    """A session's trajectories, one per context the model had (a compaction starts the next): `<base>`, `<base>#2`,
    ..., all of one task (its tools, unless given, those each context calls); a sub-agent's name its `parent`."""
    return [
        trajectory(
            batch.unique_id(base if i == 1 else f"{base}#{i}", sample),
            task if "tools" in task else task | {"tools": called_tools(messages)},
            model,
            messages,
            run_id=f"subagent-of:{parent}" if parent else None,
        )
        for i, messages in enumerate(contexts, 1)
    ]


def results_next_to_calls(messages: list[dict]) -> list[dict]:
    """Each call's result next to its call, whatever the harness wrote in between: a user, system or developer
    message logged while a call ran (Codex writes one) is kept, after the results of the calls it interrupted. An
    assistant turn ends the wait (its calls' results never came: an unanswered call)."""
    out, pending, held = [], set(), []
    for m in messages:
        role = m.get("role") if isinstance(m, dict) else None
        if role == "tool":
            out.append(m)
            pending.discard(m.get("tool_call_id"))
            if not pending:
                out, held = out + held, []
        elif role == "assistant" or not pending:
            out, held = out + held, []
            out.append(m)
            calls = m.get("tool_calls") if role == "assistant" else None
            pending = {c.get("id") for c in calls or [] if isinstance(c, dict)}
        else:
            held.append(m)
    return out + held


class Malformed(ValueError):
    """A record that is not what its format writes, said in the format's own terms."""


def in_words(exc: Exception) -> str:
    """Why a record could not be converted, in words, never a Python error's text."""
    if isinstance(exc, Malformed):
        return str(exc)
    if isinstance(exc, KeyError):
        return f"it has no {exc.args[0]!r} field where the format writes one"
    if isinstance(exc, IndexError):
        return "a list in it is shorter than the format writes"
    return "a field in it holds a value of another type or shape than the format writes"


def record_lines(record: int, build, raw: Any, reason: str) -> list[RawLine]:
    """One record's trajectories: `build()` (a trajectory, or a list of the trajectories one record holds: a
    session's segments, its sub-agents' runs) as cowork lines numbered `record`, or — when the input lacks a part
    `build` needs — the raw input quarantined with `reason` and what is wrong with it, in words."""
    try:
        built = build()
        return [RawLine(record, orjson.dumps(t)) for t in (built if isinstance(built, list) else [built])]
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        excerpt = raw if isinstance(raw, bytes) else orjson.dumps(raw, default=str)
        return [RawLine(record, excerpt[:EXCERPT_BYTES], f"{reason}: {in_words(exc)}")]


def record_line(record: int, build, raw: Any, reason: str) -> RawLine:
    """One record that is one trajectory (see `record_lines`)."""
    (line,) = record_lines(record, build, raw, reason)
    return line


def json_lines(sample, looks_like, convert, reason: str, expected: str):
    """The records of a JSON Lines format: each line `convert`ed to a cowork line; a line that is not
    JSON passes through for validation to name its problem; one that is JSON but not this format's
    record is quarantined with `reason` and what was `expected`."""
    for line in sample.lines():
        if line.error is not None or not line.data.strip():
            yield line
            continue
        try:
            obj = orjson.loads(line.data)
        except orjson.JSONDecodeError:
            yield line
            continue
        if not looks_like(obj):
            yield RawLine(line.record, line.data, f"{reason}: expected {expected}")
            continue
        yield record_line(line.record, partial(convert, obj, line.record), line.data, reason)


def chat_run(obj: dict, messages: list[dict], record_id: str, notes, name: str) -> dict:
    """A training-data record's run (ShareGPT, LLaMA-Factory): a chat, ungraded, its task the first user message's
    hash, its tools the record's `tools` (a JSON string or a list; one that is not JSON is counted in the notes as
    `<name>_tools_not_json`), else the calls it makes."""
    tools = obj.get("tools")
    if isinstance(tools, str):
        try:
            tools = orjson.loads(tools) if tools.strip() else []
        except orjson.JSONDecodeError:
            notes[f"{name}_tools_not_json"] += 1
            tools = None
    request = first_user_text(messages)
    task = {
        "task_id": task_id_of("chat", request),
        "category": "chat",
        "request": request,
        "tools": tool_definitions(tools, notes) or called_tools(messages),
    }
    return trajectory(str(obj.get("id") or record_id), task, str(obj.get("model") or "unknown"), messages)


def listed_records(sample, items: list | None, looks_like, convert, reason: str, expected: str):
    """The records of a format written as JSON Lines or as a JSON list (`items`: the document's list): each
    `convert(obj, record)`ed, and one that is not this format's record quarantined with `reason`."""
    if sample.is_lines:
        yield from json_lines(sample, looks_like, convert, reason, expected)
        return
    for i, obj in enumerate(items, 1):
        if looks_like(obj):
            yield record_line(i, partial(convert, obj, i), obj, reason)
        else:
            yield RawLine(i, orjson.dumps(obj)[:EXCERPT_BYTES], f"{reason}: expected {expected}")


def session_entries(sample) -> list[dict]:
    """The file's lines as JSON objects; a line that cannot be read or is not one raises Malformed, naming it."""
    out = []
    for line in sample.lines():
        if line.error is not None:
            raise Malformed(f"line {line.record} cannot be read ({line.error})")
        if line.data.strip():
            try:
                entry = orjson.loads(line.data)
            except orjson.JSONDecodeError:
                raise Malformed(f"line {line.record} is not JSON") from None
            if not isinstance(entry, dict):
                raise Malformed(f"line {line.record} is not a JSON object")
            out.append(entry)
    return out


def session_records(sample, reason: str, build) -> list[RawLine]:
    """A session file's trajectories (Claude Code, Codex: a JSON Lines file that is one record): `build(its
    entries)`, or the file quarantined with `reason` and why."""
    try:
        lines = session_entries(sample)
    except Malformed as exc:
        return [RawLine(1, sample.head[:EXCERPT_BYTES], f"{reason}: {exc}")]
    return record_lines(1, lambda: build(lines), sample.head, reason)


def database_records(sample, table: str, reason: str, build, size) -> Iterator[RawLine]:
    """A tool's session store (a SQLite database): each row of `table` (a session, in the order the rows were
    written) one record (`_session_record`); a database that cannot be read is one record, quarantined so."""
    try:
        with open_database(sample.path) as db:
            db.row_factory = sqlite3.Row
            rowids = [r[0] for r in db.execute(f'SELECT rowid FROM "{table}" ORDER BY rowid')]
            for number, rowid in enumerate(rowids, 1):
                yield from _session_record(sample, db, (table, rowid, number), reason, build, size)
    except sqlite3.Error as exc:
        yield RawLine(1, sample.head[:EXCERPT_BYTES], f"{reason}: the database cannot be read ({exc})")


def _session_record(sample, db, where: tuple[str, int, int], reason: str, build, size) -> list[RawLine]:
    """A stored session's trajectories, `build(db, row)`, or the session quarantined alone: with `reason` and why
    (its rows on a damaged page among them), or as `too_large` when its stored messages (`size(db, row)` bytes)
    pass `max_record_bytes`, never loaded."""
    table, rowid, number = where
    try:
        row = dict(db.execute(f'SELECT * FROM "{table}" WHERE rowid = ?', (rowid,)).fetchone())
    except sqlite3.Error as exc:
        return [RawLine(number, f"{table} row {rowid}".encode(), f"{reason}: the row cannot be read ({exc})")]
    excerpt = orjson.dumps(row, default=str)
    try:
        if size(db, row) > sample.max_record_bytes:
            return [RawLine(number, excerpt[:EXCERPT_BYTES], too_large(sample.max_record_bytes))]
        return record_lines(number, partial(build, db, row), excerpt, reason)
    except sqlite3.Error as exc:
        return [RawLine(number, excerpt[:EXCERPT_BYTES], f"{reason}: its messages cannot be read ({exc})")]
