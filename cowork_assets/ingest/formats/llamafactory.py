"""LLaMA-Factory's v1 samples (`llamafactory.v1`, its `data/*.jsonl` demos): a record `{"messages": [...], "tools"}`
whose messages hold content blocks `{"type", "value"}` rather than text, in JSON Lines or a JSON list.

A message's `text` blocks are its content, its `reasoning` blocks its `reasoning_content`, and each `tool_call`
block (JSON `{"name", "arguments"}`) one call, numbered by message as the format gives calls no ids; media blocks
are left out (counted). A `tool` message answers the calls waiting before it: one result per call when its text is
a JSON list of as many results, else the first waiting call. `tools` is the JSON string of OpenAI function schemas.
A record is a chat run, ungraded: its task the first user message's hash (category `chat`). Its `loss_weight`s are
the trainer's, not the run's, and are not read."""

from __future__ import annotations

import orjson

from cowork_assets.ingest import recount
from cowork_assets.ingest.formats import _common

NAME = "llamafactory"
PRIORITY = 35  # before openai_chat, which takes any {"messages"} record and knows no `value` blocks
RECORDS = {"lines": recount.LINES, "document": recount.ELEMENTS}
ROLES = ("system", "user", "assistant", "tool")
READ = ("text", "reasoning", "tool_call")
REASON = "bad_llamafactory_record"
EXPECTED = "an object with a messages list of content blocks"


def looks_like(obj) -> bool:
    messages = obj.get("messages") if isinstance(obj, dict) else None
    blocks = (
        messages[0].get("content")
        if isinstance(messages, list) and messages and isinstance(messages[0], dict)
        else None
    )
    return isinstance(blocks, list) and bool(blocks) and isinstance(blocks[0], dict) and "value" in blocks[0]


def detect(sample) -> bool:
    if sample.is_lines:
        return looks_like(sample.first_record)
    document = sample.document
    return isinstance(document, list) and any(looks_like(r) for r in document[:10])


def _joined(blocks: list[dict], kind: str) -> str:
    return "".join(b["value"] for b in blocks if b["type"] == kind)


def messages_of(obj: dict, notes) -> list[dict]:
    messages: list[dict] = []
    pending: list[dict] = []
    for i, m in enumerate(obj["messages"]):
        if m["role"] not in ROLES:
            raise _common.Malformed(f"message {i} has the role {m['role']!r}, not one LLaMA-Factory writes")
        blocks = m["content"]
        notes["llamafactory_media_blocks_left_out"] += sum(b["type"] not in READ for b in blocks)
        text = _joined(blocks, "text")
        if m["role"] == "tool":
            if not pending:
                raise _common.Malformed(f"message {i} (tool) answers no tool call")
            answered, pending = _common.answers(text, pending)
            messages += answered
            continue
        calls = [orjson.loads(b["value"]) for b in blocks if b["type"] == "tool_call"]
        pending = [_common.call(f"call_{i}_{k}", c["name"], c.get("arguments")) for k, c in enumerate(calls)]
        message = {"role": m["role"], "content": text if text or not pending else None}
        if reasoning := _joined(blocks, "reasoning"):
            message["reasoning_content"] = reasoning
        if pending:
            message["tool_calls"] = pending
        messages.append(message)
    return messages


def records(sample, batch):
    stem = sample.path.name.split(".")[0]

    def convert(obj: dict, record: int) -> dict:
        return _common.chat_run(obj, messages_of(obj, batch.notes), f"{stem}:{record}", batch.notes, NAME)

    items = None if sample.is_lines else sample.document
    return _common.listed_records(sample, items, looks_like, convert, REASON, EXPECTED)
