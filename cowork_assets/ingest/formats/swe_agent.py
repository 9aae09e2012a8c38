"""SWE-agent trajectories (`*.traj`: `{environment, trajectory, history, info, replay_config}`), from the 0.x
releases (text actions, no `replay_config`) to 1.x (function calling).

The conversation is `history`, the messages the model saw: system, the issue as the user's message,
assistant turns with OpenAI tool calls, and tool observations (`tool_call_ids`). An assistant turn
without tool calls but with an `action` (SWE-agent's text parsers: every 0.x run, its demonstrations) becomes
one `bash` call with `{"command": action}`, and the observation after it — a `user` entry in those releases —
its result, so truncation and the evidence audit see it as one. An in-context demonstration the harness put
before the task (`is_demo`) is left out (counted in the batch notes): it is not the task, and not this run. The
task is the instance (`replay_config.problem_statement.id`, else the file name); the sandbox is the repository
and image the replay config names (0.x runs name none: no sandbox can rebuild them); the grade comes from a
SWE-bench report in the batch (`resolved_ids`), else the run is ungraded."""

from __future__ import annotations

import re

import orjson

from cowork_assets.ingest import recount
from cowork_assets.ingest.formats import _common, swebench_report
from cowork_assets.sandbox import sandbox

NAME = "swe_agent"
PRIORITY = 30
RECORDS = recount.ONE
CODING_CATEGORIES = (NAME,)  # its runs are coding-agent runs
ROLES = ("system", "user", "assistant", "tool")
# The call that ends a run (its result is the submitted patch, not something the agent reacts to): the `submit`
# tool, or the `submit` command of a text action.
TERMINAL_TOOLS = frozenset({"submit"})
TERMINAL_COMMANDS = ("submit",)


def detect(sample) -> bool:
    """A run (`history` and `trajectory`), or a demonstration written as its `history` alone (SWE-agent's own
    entries: `agent`, `message_type`)."""
    doc = sample.document
    if not isinstance(doc, dict) or not isinstance(doc.get("history"), list):
        return False
    own = all(isinstance(m, dict) and "role" in m and ("agent" in m or "message_type" in m) for m in doc["history"])
    return isinstance(doc.get("trajectory"), list) or (bool(doc["history"]) and own)


def _replay_config(doc: dict) -> dict:
    config = doc.get("replay_config")
    if isinstance(config, str):
        try:
            config = orjson.loads(config)
        except orjson.JSONDecodeError:
            config = None
    return _common.mapping(config)


def conversation(history: list[dict], notes) -> list[dict]:
    out = []
    for i, m in enumerate(history):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise _common.Malformed(f"history entry {i} has no role SWE-agent writes (system, user, assistant, tool)")
        if str(m.get("is_demo")).lower() == "true":  # an in-context demonstration: the harness's, not the task
            notes["swe_agent_demonstrations_left_out"] += 1
            continue
        role, content = m["role"], _common.text(m.get("content"))
        message = {"role": role, "content": content if role != "tool" else content or ""}
        if role == "assistant" and m.get("tool_calls"):
            message["tool_calls"] = [
                _common.call(c["id"], c["function"]["name"], c["function"].get("arguments")) for c in m["tool_calls"]
            ]
        if role == "tool":
            message["tool_call_id"] = (m.get("tool_call_ids") or [m.get("tool_call_id")])[0]
        out.append(message | ({"action": m["action"]} if role == "assistant" and m.get("action") else {}))
    # Text actions (SWE-agent's own command parsers, every release before function calling): the action the
    # harness ran is the call, the observation after it its result.
    out = _common.text_protocol(out, lambda m: ("bash", {"command": m["action"]}) if m.get("action") else None)
    return [{k: v for k, v in m.items() if k != "action"} for m in out]


def _field(value, key: str):
    """`key` of a replay-config part, which SWE-agent writes as an object or as its Python repr."""
    if isinstance(value, dict):
        return value.get(key)
    found = re.search(rf"'{key}': '([^']*)'", value) if isinstance(value, str) else None
    return found.group(1) if found else None


def convert(doc: dict, sample, batch) -> dict:
    config = _replay_config(doc)
    instance = str((config.get("problem_statement") or {}).get("id") or sample.path.name.removesuffix(".traj"))
    messages = conversation(doc["history"], batch.notes)
    tools = _common.called_tools(messages)
    model = ((config.get("agent") or {}).get("model") or {}).get("name") or "unknown"
    env = config.get("env") or {}
    state = sandbox(
        instance,
        {
            "repo": _field(env.get("repo"), "github_url"),
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
