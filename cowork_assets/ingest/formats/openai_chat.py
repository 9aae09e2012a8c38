"""OpenAI chat JSONL: each line `{"messages": [...], "tools": [...]}` (optionally `id`, `model`).

There is no task package: the task is identified by the first user message, there are no checks
(evidence is grounding only) and no grade (such runs reach SFT only with `accept_ungraded`). Content
given as a list of parts is joined into text. Detected from the file's first record."""

from __future__ import annotations

from cowork_assets.ingest import recount
from cowork_assets.ingest.formats import _common

NAME = "openai_chat"
PRIORITY = 40
RECORDS = recount.LINES


def looks_like(obj) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("messages"), list) and "schema" not in obj


def detect(sample) -> bool:
    return sample.is_lines and looks_like(sample.first_record)


def convert(obj: dict, stem: str, record: int, notes) -> dict:
    messages = [{**m, "content": _common.text(m.get("content"))} for m in obj["messages"]]
    request = _common.first_user_text(messages)
    task_id = _common.task_id_of("chat", request)
    return _common.trajectory(
        str(obj.get("id") or f"{stem}:{record}"),
        {
            "task_id": task_id,
            "category": "chat",
            "request": request,
            "tools": _common.tool_definitions(obj.get("tools"), notes),
        },
        str(obj.get("model") or "unknown"),
        messages,
    )


def records(sample, batch):
    stem = sample.path.name.split(".")[0]
    return _common.json_lines(
        sample,
        looks_like,
        lambda obj, record: convert(obj, stem, record, batch.notes),
        "bad_openai_record",
        "an object with a messages list",
    )
