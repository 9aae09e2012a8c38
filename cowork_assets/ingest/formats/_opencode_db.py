"""OpenCode's database (`opencode.db`): its sessions, and each session's messages as the (message info, its parts)
turns the storage folder holds (`opencode`). A session's messages are in one of two stores:
- `message` and `part` rows (OpenCode 1.2 on), whose `data` is the message's or part's JSON without its ids;
- `session_message` rows (the newer store OpenCode projects its sessions into: one row a message, `type` and `data`
  of `user`, `synthetic`, `shell`, `assistant` (its `content`: `text`, `reasoning` and `tool` items, a tool's
  `state` holding its input and its output `content`), `compaction` (its `summary`), `agent-switched` and
  `model-switched`), read when the session has no `message` row."""

from __future__ import annotations

import sqlite3
from collections import defaultdict

import orjson

from cowork_assets.ingest.formats import _common

SESSIONS = {"session": {"id", "directory"}}
LEGACY = {"message": {"id", "session_id", "data"}, "part": {"id", "session_id", "message_id", "data"}}
PROJECTED = {"session_message": {"id", "session_id", "type", "data"}}


def is_store(sample) -> bool:
    return sample.has_tables(SESSIONS) and (sample.has_tables(LEGACY) or sample.has_tables(PROJECTED))


def turns(db: sqlite3.Connection, session: str, tables: dict[str, set[str]]) -> list[tuple[dict, list[dict]]]:
    """A session's (message info, its parts), from the database's `tables` (`Sample.tables`: read once, at
    detection)."""
    legacy = _legacy(db, session) if {"message", "part"} <= tables.keys() else []
    return legacy or (_projected(db, session, tables["session_message"]) if "session_message" in tables else [])


def stored_bytes(db: sqlite3.Connection, row: dict, tables: dict[str, set[str]]) -> int:
    """The bytes of a session's stored messages and parts, in whichever store holds them (its record's size)."""
    found = tables.keys() & {"message", "part", "session_message"}
    sizes = (f'SELECT coalesce(sum(length(CAST(data AS BLOB))), 0) FROM "{t}" WHERE session_id = ?' for t in found)
    return sum(db.execute(size, (row["id"],)).fetchone()[0] for size in sizes)


def _legacy(db: sqlite3.Connection, session: str) -> list[tuple[dict, list[dict]]]:
    parts = defaultdict(list)
    found = db.execute("SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY id", (session,))
    for ident, message, data in found:
        parts[message].append({"id": ident, "messageID": message, **orjson.loads(data)})
    found = db.execute("SELECT id, data FROM message WHERE session_id = ? ORDER BY id", (session,))
    return [({"id": ident, "sessionID": session, **orjson.loads(data)}, parts[ident]) for ident, data in found]


def _projected(db: sqlite3.Connection, session: str, columns: set[str]) -> list[tuple[dict, list[dict]]]:
    order = "seq" if "seq" in columns else "time_created, id" if "time_created" in columns else "id"
    found = db.execute(f"SELECT id, type, data FROM session_message WHERE session_id = ? ORDER BY {order}", (session,))
    return [_turn(ident, kind, orjson.loads(data)) for ident, kind, data in found]


def _turn(ident: str, kind: str, data: dict) -> tuple[dict, list[dict]]:
    """A projected message as the legacy (info, parts) it stands for."""
    if kind == "assistant":
        model = _common.mapping(data.get("model"))
        info = {"id": ident, "role": "assistant", "modelID": model.get("id") or model.get("modelID")}
        return info | {"providerID": model.get("providerID")}, [_part(c) for c in data.get("content") or []]
    user = {"id": ident, "role": "user"}
    if kind == "compaction":  # the summary the conversation goes on from: a new context
        return user, [{"type": "compaction"}, {"type": "text", "text": data.get("summary") or ""}]
    if kind == "shell":  # a command the user ran (`!`): what the model was shown of it
        return user, [{"type": "text", "text": f"$ {data.get('command', '')}\n{data.get('output', '')}"}]
    if kind in ("user", "synthetic"):
        return user, [{"type": "text", "text": data.get("text") or ""}]
    return user, []  # agent-switched, model-switched: no message


def _part(item: dict) -> dict:
    if item.get("type") != "tool":
        return item  # text and reasoning are the legacy parts' shape
    state = item.get("state") or {}
    output = _common.text(state.get("content")) or ""
    if state.get("status") == "error":
        error = state.get("error")
        said = error.get("message") if isinstance(error, dict) else error
        output = "\n".join(str(x) for x in (output, said) if x)
    legacy = {"status": state.get("status"), "input": state.get("input"), "output": output, "error": output}
    return {"type": "tool", "callID": item.get("id"), "tool": item.get("name"), "state": legacy}
