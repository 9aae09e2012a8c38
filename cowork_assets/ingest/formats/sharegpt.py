"""ShareGPT conversations, as FastChat (Vicuna) and LLaMA-Factory (`formatting: sharegpt`) write them: a record
`{"conversations": [{"from", "value"}, ...]}`, optionally with `id`, `system` (the system prompt) and `tools` (the
function schemas, as a JSON string or a list), in a JSON Lines file, a JSON list, or an object holding the list
under `data`.

Turns are tagged `human`/`user`, `gpt`/`assistant`, `system`, `function_call` and `observation` (LLaMA-Factory's
default tags; `tool` and `function` are read as observations). A `function_call` turn is an assistant's calls: its
value the JSON `{"name", "arguments"}`, or a list of them made at once; ShareGPT gives calls no ids, so they are
numbered by turn. The `observation` turn after it answers them: one result per call when its value is a JSON list
of as many results, else the first call. A record is a chat run, ungraded: its task the first user turn's hash
(category `chat`, as for OpenAI chat records)."""

from __future__ import annotations

from functools import partial

import orjson

from cowork_assets.ingest import recount
from cowork_assets.ingest.formats import _common
from cowork_assets.ingest.raw_files import RawLine

NAME = "sharegpt"
PRIORITY = 40
RECORDS = {"lines": recount.LINES, "document": recount.items("data")}
ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system"}
CALLS, RESULTS = "function_call", ("observation", "tool", "function")
REASON = "bad_sharegpt_record"
EXPECTED = "an object with a conversations list"


def looks_like(obj) -> bool:
    turns = obj.get("conversations") if isinstance(obj, dict) else None
    return isinstance(turns, list) and bool(turns) and isinstance(turns[0], dict) and "from" in turns[0]


def listed(document) -> list | None:
    """The records of a JSON document: the list itself, or the one under `data`."""
    found = document.get("data") if isinstance(document, dict) else document
    return found if isinstance(found, list) else None


def detect(sample) -> bool:
    if sample.is_lines:
        return looks_like(sample.first_record)
    return any(looks_like(r) for r in (listed(sample.document) or [])[:10])


def _calls(value: str, turn: int) -> list[dict]:
    try:
        made = orjson.loads(value) if isinstance(value, str) else value
    except orjson.JSONDecodeError:
        raise _common.Malformed(f"turn {turn} (function_call) is not JSON") from None
    made = made if isinstance(made, list) else [made]
    return [_common.call(f"call_{turn}_{k}", c["name"], c.get("arguments")) for k, c in enumerate(made)]


def messages_of(obj: dict) -> list[dict]:
    messages = [{"role": "system", "content": obj["system"]}] if isinstance(obj.get("system"), str) else []
    pending: list[dict] = []
    for turn, entry in enumerate(obj["conversations"]):
        tag, value = entry["from"], entry["value"]
        if tag == CALLS:
            pending = _calls(value, turn)
            messages.append({"role": "assistant", "content": None, "tool_calls": pending})
        elif tag in RESULTS:
            if not pending:
                raise _common.Malformed(f"turn {turn} ({tag}) answers no function_call turn")
            messages += _common.answers(_common.text(value) or "", pending)[0]
            pending = []
        elif tag in ROLES:
            messages.append({"role": ROLES[tag], "content": _common.text(value)})
            pending = []
        else:
            raise _common.Malformed(f"turn {turn} is tagged {tag!r}, not a ShareGPT tag")
    return messages


def convert(obj: dict, stem: str, record: int, notes) -> dict:
    messages = messages_of(obj)
    tools = obj.get("tools")
    if isinstance(tools, str):
        try:
            tools = orjson.loads(tools) if tools.strip() else []
        except orjson.JSONDecodeError:
            notes["sharegpt_tools_not_json"] += 1
            tools = None
    request = _common.first_user_text(messages)
    task = {
        "task_id": _common.task_id_of("chat", request),
        "category": "chat",
        "request": request,
        "tools": _common.tool_definitions(tools, notes) or _common.called_tools(messages),
    }
    return _common.trajectory(
        str(obj.get("id") or f"{stem}:{record}"), task, str(obj.get("model") or "unknown"), messages
    )


def records(sample, batch):
    stem = sample.path.name.split(".")[0]
    if sample.is_lines:
        yield from _common.json_lines(
            sample, looks_like, lambda obj, record: convert(obj, stem, record, batch.notes), REASON, EXPECTED
        )
        return
    for i, obj in enumerate(listed(sample.document), 1):
        if looks_like(obj):
            yield _common.record_line(i, partial(convert, obj, stem, i, batch.notes), obj, REASON)
        else:
            excerpt = orjson.dumps(obj)[: _common.EXCERPT_BYTES]
            yield RawLine(i, excerpt, f"{REASON}: expected {EXPECTED}")
