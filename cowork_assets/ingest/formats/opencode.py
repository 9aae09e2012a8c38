"""OpenCode sessions, as OpenCode stores them: its database `~/.local/share/opencode/opencode.db` (SQLite, OpenCode
1.2 on: a `session` row each; its messages in `message` and `part` rows, whose `data` is the message's or part's JSON
without its ids, or, in the newer store OpenCode projects sessions into, in `session_message` rows, each a `user`,
`synthetic`, `shell`, `assistant` or `compaction` message read as the parts it stands for), or the storage folder
of releases before it (`~/.local/share/opencode/storage/`): a session's info `session/<project>/<session id>.json`
(`{id: "ses_…", projectID, directory, title, time, ...}`: the record), its messages
`message/<session id>/<message id>.json` (`{id, sessionID, role, modelID, providerID, ...}`) and their parts
`part/<message id>/<part id>.json` (`{id, messageID, type, ...}`), read with it (`opencode_storage`). A session is
one run; messages and parts are taken in the order of their ids (OpenCode's ids ascend with time).

A part is `text` (a turn's text; the user's `synthetic` ones are OpenCode's own notes, kept as it sent them),
`reasoning`, `tool` (`{callID, tool, state: {status, input, output | error}}`: a call, answered by its output or
error unless it never finished), or bookkeeping (`step-start`, `step-finish`, `snapshot`, `patch`, `agent`, `file`
references: not messages). **Compaction**: a user message holding a `compaction` part asks for the summary the
conversation goes on from: it starts a new context, each context its own trajectory (`<session>`,
`<session>#2`, ...). A sub-agent's session (`parentID`) names its parent (`teacher.run_id` = `subagent-of:<parent>`).
The model is the assistant messages' `providerID/modelID`; the session has no grade: runs are ungraded."""

from __future__ import annotations

from collections import defaultdict
from functools import partial

from cowork_assets.ingest import reasoning, recount
from cowork_assets.ingest.formats import _common, _opencode_db

NAME = "opencode"
PRIORITY = 20
RECORDS = {"lines": recount.ONE, "document": recount.ONE, "database": recount.rows("session")}
CODING_CATEGORIES = (NAME,)  # its runs are coding-agent runs


def is_session(doc) -> bool:
    return isinstance(doc, dict) and str(doc.get("id", "")).startswith("ses_") and "time" in doc and "role" not in doc


def detect(sample) -> bool:
    if sample.kind == "database":
        return _opencode_db.is_store(sample)
    return not sample.is_lines and is_session(sample.document)


def _stored_index(batch) -> dict[tuple[str, str], list[dict]]:
    """The storage folder's messages by session and parts by message, each in id order."""
    found = defaultdict(list)
    for sample in batch.auxiliary("opencode_storage"):
        doc = sample.document
        ident = str(doc.get("id", "")) if isinstance(doc, dict) else ""
        if ident.startswith("msg_"):
            found["message", doc.get("sessionID")].append(doc)
        elif ident.startswith("prt_"):
            found["part", doc.get("messageID")].append(doc)
    return {key: sorted(docs, key=lambda d: d["id"]) for key, docs in found.items()}


def stored(batch, kind: str, owner: str) -> list[dict]:
    """The stored messages (`kind` "message") of one session, or parts ("part") of one message, in id order."""
    return batch.once(NAME, lambda: _stored_index(batch)).get((kind, owner), [])


def _turn(info: dict, parts: list[dict]) -> list[dict]:
    if info.get("role") == "assistant":
        texts = [{"type": "text", "text": p.get("text") or ""} for p in parts if p.get("type") == "text"]
        thought = [{"type": "reasoning", "text": p.get("text") or ""} for p in parts if p.get("type") == "reasoning"]
        text, found = reasoning.assistant_turn({}, thought + texts)
        tools = [p for p in parts if p.get("type") == "tool" and p.get("callID")]
        calls = [_common.call(str(p["callID"]), str(p.get("tool")), (p.get("state") or {}).get("input")) for p in tools]
        out = [
            {"role": "assistant", "content": text or None, "reasoning_content": found}
            | ({"tool_calls": calls} if calls else {})
        ]
        for p in tools:
            state = p.get("state") or {}
            if state.get("status") in ("completed", "error"):
                result = state.get("output") if state.get("status") == "completed" else state.get("error")
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": str(p["callID"]),
                        "content": _common.text(result) or str(result or ""),
                    }
                )
        return out
    text = "\n\n".join(p.get("text") or "" for p in parts if p.get("type") == "text" and not p.get("ignored"))
    return [{"role": "user", "content": text}] if text else []


def stored_turns(batch, session: str):
    """A stored session's messages, each with its parts: (info, parts), from the storage folder's files."""
    for info in stored(batch, "message", session):
        yield info, stored(batch, "part", info["id"])


def contexts(turns, notes) -> tuple[list[list[dict]], str | None]:
    """(each context's messages, the model) of a session's (message info, its parts), in order."""
    out: list[list[dict]] = [[]]
    model = None
    for info, parts in turns:
        if info.get("role") == "user" and any(p.get("type") == "compaction" for p in parts) and out[-1]:
            out.append([])
            notes["opencode_compactions_split_into_contexts"] += 1
        if info.get("role") == "assistant" and info.get("modelID") and model is None:
            model = "/".join(str(x) for x in (info.get("providerID"), info["modelID"]) if x)
        out[-1].extend(_turn(info, parts))
    return out, model


def convert(doc: dict, sample, batch, turns=None) -> list[dict]:
    found, model = contexts(stored_turns(batch, doc["id"]) if turns is None else turns, batch.notes)
    runs = [c for c in found if any(m["role"] == "assistant" for m in c)]
    if not runs:
        where = "in the database" if turns is not None else "beside it (message/ and part/ folders)"
        raise _common.Malformed(f"no message of the session's model is stored {where}")
    request = _common.first_user_text(runs[0])
    state = {"directory": doc["directory"]} if doc.get("directory") else {}
    task = {"task_id": _common.task_id_of(NAME, request), "category": NAME, "request": request, "initial_state": state}
    return _common.context_runs(doc["id"], task, model or "unknown", runs, sample, batch, doc.get("parentID"))


def _stored_session(db, row: dict, sample, batch) -> list[dict]:
    doc = {"id": row["id"], "directory": row["directory"], "parentID": row.get("parent_id")}
    return convert(doc, sample, batch, _opencode_db.turns(db, row["id"], sample.tables))


def records(sample, batch):
    if sample.kind == "database":
        build = partial(_stored_session, sample=sample, batch=batch)
        sizes = partial(_opencode_db.stored_bytes, tables=sample.tables)
        yield from _common.database_records(sample, "session", "bad_opencode_record", build, sizes)
        return
    yield from _common.record_lines(
        1, lambda: convert(sample.document, sample, batch), sample.head, "bad_opencode_record"
    )
