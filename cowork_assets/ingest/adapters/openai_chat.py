"""OpenAI chat JSONL -> `cowork.trajectory/v1`.

Each line is `{"messages": [...], "tools": [...]}` (optionally `id`, `model`). There is no task
package: the task is identified by the first user message, there are no checks (evidence is then
grounding only) and no grade (such runs reach SFT only with `accept_ungraded`). Content given as a
list of parts is joined into text.
"""

from __future__ import annotations

import hashlib

import orjson


def looks_like(obj) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("messages"), list) and "schema" not in obj


def _text(content) -> str | None:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content


def tool_definitions(tools) -> list[dict]:
    out = []
    for t in tools or []:
        f = t.get("function", t) if isinstance(t, dict) else None
        if isinstance(f, dict) and isinstance(f.get("name"), str):
            out.append({"name": f["name"], "description": f.get("description", ""),
                        "parameters": f.get("parameters") or {"type": "object", "properties": {}}})
    return out


def convert(obj: dict, stem: str, record: int) -> dict:
    messages = [{**m, "content": _text(m.get("content"))} for m in obj["messages"]]
    request = next((m["content"] for m in messages if m.get("role") == "user" and m.get("content")), "")
    task_id = "chat-" + hashlib.sha256(request.encode()).hexdigest()[:12]
    return {
        "schema": "cowork.trajectory/v1",
        "trajectory_id": str(obj.get("id") or f"{stem}:{record}"),
        "task": {"task_id": task_id, "category": "chat", "request": request, "initial_state": {},
                 "tools": tool_definitions(obj.get("tools")), "checks": []},
        "teacher": {"model": str(obj.get("model") or "unknown"), "role": "teacher"},
        "group_id": task_id,
        "messages": messages,
    }


def convert_line(data: bytes, stem: str, record: int) -> tuple[bytes, str | None]:
    """(cowork JSON line, None), or the line unchanged with an error reason (bad JSON passes through)."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return data, None  # validation names the JSON problem
    if not looks_like(obj):
        return data, "bad_openai_record: expected an object with a messages list"
    try:
        return orjson.dumps(convert(obj, stem, record)), None
    except (AttributeError, TypeError) as exc:
        return data, f"bad_openai_record: {exc}"
