"""mini-swe-agent trajectories (`*.traj.json`), in both of its forms:

* current: `{info: {exit_status, submission, model_stats, config}, messages, trajectory_format:
  "mini-swe-agent-1.x", instance_id}` with OpenAI tool calls and `tool` messages;
* older: a bare list of `{role, content}` messages whose assistant turns hold the command in a fenced
  block (```bash or ```mswea_bash_command) and whose next user turn holds its output. Each fenced
  command becomes one `bash` call with `{"command": ...}`, and that user turn its tool result.
The task is `instance_id` (else the file name); the grade comes from a SWE-bench report beside the
file, else the run is ungraded."""

from __future__ import annotations

import re

from cowork_assets.ingest import recount
from cowork_assets.ingest.formats import _common, swebench_report

NAME = "mini_swe_agent"
PRIORITY = 30
RECORDS = recount.ONE
# mini-swe-agent ends a run with a bash command that echoes its sentinel (older releases: another sentinel).
TERMINAL_COMMANDS = ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "echo MINI_SWE_AGENT_FINAL_OUTPUT")
FENCE = re.compile(r"```(?:bash|sh|shell|mswea_bash_command)?[ \t]*\n(.*?)\n?```", re.S)


def _is_chat(messages) -> bool:
    return (
        isinstance(messages, list)
        and bool(messages)
        and all(isinstance(m, dict) and "role" in m for m in messages)
        and any(m.get("role") == "assistant" for m in messages)
    )


def detect(sample) -> bool:
    doc = sample.document
    if isinstance(doc, dict):
        return str(doc.get("trajectory_format", "")).startswith("mini-swe-agent") or (
            _is_chat(doc.get("messages")) and isinstance(doc.get("info"), dict) and "exit_status" in doc["info"]
        )
    return _is_chat(doc) and any(
        m.get("role") == "assistant" and FENCE.search(_common.text(m.get("content")) or "") for m in doc
    )


def fenced_calls(messages: list[dict]) -> list[dict]:
    """The older form: a fenced command is a bash call, the user turn after it the command's result."""
    out, pending = [], None
    for i, m in enumerate(messages):
        content = _common.text(m.get("content"))
        if m["role"] == "user" and pending:
            out.append({"role": "tool", "tool_call_id": pending, "name": "bash", "content": content or ""})
            pending = None
            continue
        message = {"role": m["role"], "content": content}
        if m["role"] == "assistant" and (found := FENCE.search(content or "")):
            pending = f"call_{i}"
            message["tool_calls"] = [_common.call(pending, "bash", {"command": found.group(1)})]
        out.append(message)
    return out


def convert(doc, sample, batch) -> dict:
    stem = sample.path.name.removesuffix(".json").removesuffix(".traj")
    if isinstance(doc, list):
        messages, info, instance = fenced_calls(doc), {}, stem
    else:
        info, instance = doc.get("info") or {}, str(doc.get("instance_id") or stem)
        messages = [{**m, "content": _common.text(m.get("content"))} for m in doc["messages"]]
        if not any(m.get("tool_calls") for m in messages):
            messages = fenced_calls(messages)
    model = ((info.get("config") or {}).get("model") or {}).get("model_name") or "unknown"
    return _common.trajectory(
        batch.unique_id(stem, sample),
        {
            "task_id": instance,
            "category": "mini_swe_agent",
            "request": _common.first_user_text(messages),
            "tools": _common.called_tools(messages) or [_common.BASH_TOOL],
            "initial_state": _common.sandbox(instance),
        },
        str(model),
        messages,
        grade=swebench_report.grade(batch, instance),
    )


def records(sample, batch):
    yield _common.record_line(
        1, lambda: convert(sample.document, sample, batch), sample.head, "bad_mini_swe_agent_record"
    )
