"""SWE-agent trajectories (`*.traj`: `{environment, trajectory, history, info, replay_config}`).

The conversation is `history`, the messages the model saw: system, the issue as the user's message,
assistant turns with OpenAI tool calls, and tool observations (`tool_call_ids`). An assistant turn
without tool calls but with an `action` (SWE-agent's text parsers) becomes one `bash` call with
`{"command": action}`, answered by the observation that follows. The task is the instance
(`replay_config.problem_statement.id`, else the file name); the grade comes from a SWE-bench report
beside the file (`resolved_ids`), else the run is ungraded."""

from __future__ import annotations

import re

import orjson

from cowork_assets.ingest import recount
from cowork_assets.ingest.formats import _common, swebench_report

NAME = "swe_agent"
PRIORITY = 30
RECORDS = recount.ONE
# The call that ends a run (its result is the submitted patch, not something the agent reacts to).
TERMINAL_TOOLS = frozenset({"submit"})


def detect(sample) -> bool:
    doc = sample.document
    return isinstance(doc, dict) and isinstance(doc.get("history"), list) and isinstance(doc.get("trajectory"), list)


def _replay_config(doc: dict) -> dict:
    config = doc.get("replay_config")
    if isinstance(config, str):
        try:
            config = orjson.loads(config)
        except orjson.JSONDecodeError:
            config = None
    return config if isinstance(config, dict) else {}


def conversation(history: list[dict]) -> list[dict]:
    out, pending = [], None  # pending: the id of a text action's call, answered by the next observation
    for i, m in enumerate(history):
        role, content = m["role"], _common.text(m.get("content"))
        if role == "assistant":
            message = {"role": "assistant", "content": content}
            calls = m.get("tool_calls") or []
            if calls:
                message["tool_calls"] = [
                    _common.call(c["id"], c["function"]["name"], c["function"].get("arguments")) for c in calls
                ]
            elif m.get("action"):
                pending = f"action_{i}"
                message["tool_calls"] = [_common.call(pending, "bash", {"command": m["action"]})]
            out.append(message)
        elif role == "tool" or (pending and m.get("message_type") == "observation"):
            ids = m.get("tool_call_ids") or [pending]
            out.append({"role": "tool", "tool_call_id": ids[0], "content": content or ""})
            pending = None
        else:
            out.append({"role": role, "content": content})
    return out


def _field(value, key: str):
    """`key` of a replay-config part, which SWE-agent writes as an object or as its Python repr."""
    if isinstance(value, dict):
        return value.get(key)
    found = re.search(rf"'{key}': '([^']*)'", value) if isinstance(value, str) else None
    return found.group(1) if found else None


def convert(doc: dict, sample, batch) -> dict:
    config = _replay_config(doc)
    instance = str((config.get("problem_statement") or {}).get("id") or sample.path.name.removesuffix(".traj"))
    messages = conversation(doc["history"])
    tools = _common.called_tools(messages)
    model = ((config.get("agent") or {}).get("model") or {}).get("name") or "unknown"
    env = config.get("env") or {}
    state = _common.sandbox(
        instance,
        {
            "base_commit": _field(env.get("repo"), "base_commit"),
            "image": _field(env.get("deployment"), "image"),
            "problem_statement": (config.get("problem_statement") or {}).get("text"),
        },
    )
    return _common.trajectory(
        batch.unique_id(sample.path.name.removesuffix(".traj"), sample),
        {
            "task_id": instance,
            "category": "swe_agent",
            "request": _common.first_user_text(messages),
            "tools": tools,
            "initial_state": state,
        },
        str(model),
        messages,
        grade=swebench_report.grade(batch, instance),
    )


def records(sample, batch):
    yield _common.record_line(1, lambda: convert(sample.document, sample, batch), sample.head, "bad_swe_agent_record")
