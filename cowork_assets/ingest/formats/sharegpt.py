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

import orjson

from cowork_assets.ingest import reasoning, recount
from cowork_assets.ingest.formats import _common

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
            message = {"role": ROLES[tag], "content": _common.text(value)}
            if message["role"] == "assistant":  # a reasoning model's <think> span, as LLaMA-Factory writes it
                message["content"], message["reasoning_content"] = reasoning.split_text(message["content"])
            messages.append(message)
            pending = []
        else:
            raise _common.Malformed(f"turn {turn} is tagged {tag!r}, not a ShareGPT tag")
    return messages


def records(sample, batch):
    stem = sample.path.name.split(".")[0]

    def convert(obj: dict, record: int) -> dict:
        return _common.chat_run(obj, messages_of(obj), f"{stem}:{record}", batch.notes, NAME)

    items = None if sample.is_lines else listed(sample.document)
    return _common.listed_records(sample, items, looks_like, convert, REASON, EXPECTED)
