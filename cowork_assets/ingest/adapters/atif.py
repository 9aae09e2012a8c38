"""Harbor's ATIF trajectories (`*.json`, one trajectory per file) -> `cowork.trajectory/v1`.

Steps become messages: `system`/`user` steps their text, an `agent` step an assistant message with
its `tool_calls` (arguments serialised as JSON strings), followed by one tool message per
`observation.results` entry (matched by `source_call_id`). Tools come from
`agent.tool_definitions`, else from the calls seen. There is no grader in the file: no checks, no grade.
"""

from __future__ import annotations

import hashlib

import orjson

from cowork_assets.ingest.adapters.openai_chat import tool_definitions

ROLE = {"system": "system", "user": "user", "agent": "assistant"}


def looks_like(obj) -> bool:
    return isinstance(obj, dict) and str(obj.get("schema_version", "")).startswith("ATIF") and "steps" in obj


def convert(obj: dict, stem: str) -> dict:
    messages, names = [], {}
    for step in obj["steps"]:
        role = ROLE[step["source"]]
        message = {"role": role, "content": step.get("message") if isinstance(step.get("message"), str) else None}
        calls = step.get("tool_calls") or []
        if calls:
            message["tool_calls"] = [{"id": c["tool_call_id"], "type": "function", "function": {
                "name": c["function_name"], "arguments": orjson.dumps(c.get("arguments") or {}).decode()
                if not isinstance(c.get("arguments"), str) else c["arguments"]}} for c in calls]
            names |= {c["tool_call_id"]: c["function_name"] for c in calls}
        messages.append(message)
        for r in (step.get("observation") or {}).get("results") or []:
            messages.append({"role": "tool", "tool_call_id": r.get("source_call_id"),
                             "name": names.get(r.get("source_call_id")), "content": str(r.get("content", ""))})
    agent = obj.get("agent") or {}
    request = next((m["content"] for m in messages if m["role"] == "user" and m["content"]), "")
    task_id = "atif-" + hashlib.sha256(request.encode()).hexdigest()[:12]
    tools = tool_definitions(agent.get("tool_definitions")) or [
        {"name": n, "description": "", "parameters": {"type": "object", "properties": {}}} for n in dict.fromkeys(names.values())]
    return {
        "schema": "cowork.trajectory/v1",
        "trajectory_id": str(obj.get("session_id") or stem),
        "task": {"task_id": task_id, "category": "atif", "request": request, "initial_state": {}, "tools": tools,
                 "checks": []},
        "teacher": {"model": str(agent.get("model_name") or agent.get("name") or "unknown"), "role": "teacher"},
        "group_id": task_id,
        "messages": messages,
    }
