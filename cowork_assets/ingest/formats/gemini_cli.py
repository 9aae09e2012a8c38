"""Gemini CLI sessions (`~/.gemini/tmp/<project>/chats/session-<time>-<id>.json[l]`; a sub-agent's under
`chats/<parent session>/<id>.jsonl`), as `chatRecordingService.ts` writes them.

Three layouts: a conversation saved with `/chat save` (`checkpoint-<tag>.json`) or exported with `/chat share`
(the API's `Content` list: `user` and `model` turns of parts), the JSON document of releases up to 2026
(`{sessionId, projectHash, startTime, messages}`), and the JSON Lines log that replaced it: a first line
`{sessionId, projectHash, ...}`, then records appended as the session goes: a message (`id`, written again each time
it grows: the last one written wins, in the place it first took), `{"$rewindTo": id}` (the user rewound: that
message and those after it are gone), `{"$set": {...}}` (metadata; a `messages` list there is the history the model
goes on with, e.g. after compression).

A message is `user`, `gemini` (the model), or the CLI's own `info`/`error`/`warning` (not conversation: counted, as
is a message of any other type).
A model message's text is its content's text; its reasoning its `thoughts` (subject and description) and any
thought parts; its calls its `toolCalls`, each answered by its `result` (the `functionResponse` sent back: its
`output`, else its `error`, else the response as JSON, and any further parts); a call with no result was never
answered (cancelled). Content written as API parts (a model's `functionCall`, a user's `functionResponse`) is read
the same way.

**Compression**: a `messages` list that does not continue the history (a summary turn in place of earlier turns)
starts a new context: each context is its own trajectory (`<session>`, `<session>#2`, ...), so no turn is trained in
a context it did not have. A sub-agent's session names its parent (`teacher.run_id` = `subagent-of:<parent>`).
The session has no grade: runs are ungraded.
"""

from __future__ import annotations

import orjson

from cowork_assets.ingest import reasoning, recount
from cowork_assets.ingest.formats import _common

NAME = "gemini_cli"
PRIORITY = 20
RECORDS = recount.ONE
CODING_CATEGORIES = (NAME,)  # its runs are coding-agent runs
CLI_MESSAGES = ("info", "error", "warning")


def _header(obj) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("sessionId"), str) and isinstance(obj.get("projectHash"), str)


def is_checkpoint(sample) -> bool:
    """A conversation saved with `/chat save <tag>` (`checkpoint-<tag>.json`) or exported with `/chat share
    <file>.json`: the API's `Content` list, `user` and `model` turns of parts."""
    doc = sample.document
    return (
        isinstance(doc, list)
        and any(isinstance(c, dict) and c.get("role") == "model" for c in doc)
        and all(
            isinstance(c, dict) and c.get("role") in ("user", "model") and isinstance(c.get("parts"), list) for c in doc
        )
    )


def detect(sample) -> bool:
    if sample.is_lines:
        return _header(sample.first_record)
    doc = sample.document
    return _header(doc) and isinstance(doc.get("messages"), list) or is_checkpoint(sample)


def contexts(entries: list[dict]) -> tuple[dict, list[list[dict]]]:
    """(the session's metadata, its contexts: each the messages the model saw, in order)."""
    meta: dict = {}
    done: list[list[dict]] = []
    current: dict[str, dict] = {}
    for e in entries:
        if "$rewindTo" in e:
            ids = list(current)
            cut = ids.index(e["$rewindTo"]) if e["$rewindTo"] in current else 0
            current = {k: current[k] for k in ids[:cut]}
        elif isinstance(e.get("$set"), dict):
            meta |= {k: v for k, v in e["$set"].items() if k != "messages"}
            history = {m["id"]: m for m in e["$set"].get("messages") or [] if isinstance(m, dict) and "id" in m}
            before, after = list(current), list(history)
            if after[: len(before)] == before:  # the history goes on: its new turns are added
                current |= {k: m for k, m in history.items() if k not in current}
            elif before[: len(after)] != after:  # compressed: the model goes on from this history
                done.append(list(current.values()))
                current = history
        elif isinstance(e.get("id"), str):
            current[e["id"]] = e
        elif _header(e):
            meta |= e
    return meta, [*done, list(current.values())]


def _parts(content) -> list:
    if isinstance(content, list):
        return content
    return [content] if content not in (None, "") else []


def _response_text(parts) -> str:
    """A tool result as the model got it: each `functionResponse`'s output (else error, else the response as JSON)
    and each text part."""
    out = []
    for p in _parts(parts):
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, dict) and isinstance(p.get("functionResponse"), dict):
            response = p["functionResponse"].get("response")
            found = next(
                (response[k] for k in ("output", "error") if isinstance(response, dict) and k in response), None
            )
            out.append(found if isinstance(found, str) else orjson.dumps(response).decode())
        elif isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought"):
            out.append(p["text"])
    return "\n".join(out)


def _thoughts(message: dict) -> str | None:
    found = (
        "\n".join(x for x in (t.get("subject"), t.get("description")) if isinstance(x, str) and x.strip())
        for t in message.get("thoughts") or []
        if isinstance(t, dict)
    )
    return reasoning.joined(*found)


def conversation(history: list[dict], notes) -> list[dict]:
    out: list[dict] = []
    called, answered = set(), set()  # a call recorded both as a tool call record and as API parts is one call
    for m in history:
        kind = m.get("type")
        parts = _parts(m.get("content"))
        if kind in CLI_MESSAGES:
            notes["gemini_cli_messages_of_the_cli_not_conversation"] += 1
        elif kind == "user":
            for p in parts:
                if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict):
                    r = p["functionResponse"]
                    if (call_id := str(r.get("id") or r.get("name"))) not in answered:
                        answered.add(call_id)
                        out.append({"role": "tool", "tool_call_id": call_id, "content": _response_text([p])})
            if text := _common.text([p if isinstance(p, dict) else {"text": p} for p in parts if not _is_call_part(p)]):
                out.append({"role": "user", "content": text})
        elif kind == "gemini":
            text, found = reasoning.assistant_turn({}, [p if isinstance(p, dict) else {"text": p} for p in parts])
            records = [c for c in m.get("toolCalls") or [] if isinstance(c, dict)]
            calls = [_common.call(str(c["id"]), c["name"], c.get("args")) for c in records]
            for p in parts:
                if isinstance(p, dict) and isinstance(p.get("functionCall"), dict):
                    f = p["functionCall"]
                    if (call_id := str(f.get("id") or f["name"])) not in called | {c["id"] for c in calls}:
                        calls.append(_common.call(call_id, f["name"], f.get("args")))
            called |= {c["id"] for c in calls}
            message = {"role": "assistant", "content": text or None}
            message["reasoning_content"] = reasoning.joined(_thoughts(m), found)
            out.append(message | ({"tool_calls": calls} if calls else {}))
            for c in records:
                if c.get("result") not in (None, []) and str(c["id"]) not in answered:
                    answered.add(str(c["id"]))
                    out.append({"role": "tool", "tool_call_id": str(c["id"]), "content": _response_text(c["result"])})
                else:
                    notes["gemini_cli_calls_without_a_result"] += 1
        else:  # a type of a later release (or a fork's own): not conversation this reader knows
            notes[f"gemini_cli_messages_of_type_{kind}_left_out"] += 1
    return out


def _is_call_part(p) -> bool:
    return isinstance(p, dict) and ("functionResponse" in p or "functionCall" in p)


def convert(entries: list[dict], sample, batch) -> list[dict]:
    meta, parts = contexts(entries)
    session = str(meta.get("sessionId") or sample.path.stem)
    runs = [c for c in (conversation(h, batch.notes) for h in parts) if any(m["role"] == "assistant" for m in c)]
    if not runs:
        raise _common.Malformed("the session holds no turn of the model")
    if len(runs) > 1:
        batch.notes["gemini_cli_compressions_split_into_contexts"] += len(runs) - 1
    request = _common.first_user_text(runs[0])
    task = {"task_id": _common.task_id_of(NAME, request), "category": NAME, "request": request}
    model = next((m.get("model") for h in parts for m in h if m.get("type") == "gemini" and m.get("model")), None)
    parent = sample.path.parent.name if meta.get("kind") == "subagent" else None
    return _common.context_runs(session, task, str(model or "unknown"), runs, sample, batch, parent)


def records(sample, batch):
    if sample.is_lines:
        yield from _common.session_records(sample, "bad_gemini_cli_record", lambda lines: convert(lines, sample, batch))
        return
    doc = sample.document
    if is_checkpoint(sample):
        turns = ({"type": "gemini" if c["role"] == "model" else "user", "content": c["parts"]} for c in doc)
        doc = {"sessionId": sample.path.stem, "messages": list(turns)}
    entries = [
        {k: v for k, v in doc.items() if k != "messages"},
        *({"id": f"message-{i}"} | m for i, m in enumerate(doc["messages"]) if isinstance(m, dict)),
    ]
    yield from _common.record_lines(1, lambda: convert(entries, sample, batch), sample.head, "bad_gemini_cli_record")
