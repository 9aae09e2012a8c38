"""mini-swe-agent trajectories (`<instance>.traj.json`; a batch run writes `<output>/<instance>/<instance>.traj.json`),
in each form its releases wrote:

* 2.x (`trajectory_format: "mini-swe-agent-1.1"`): `{info: {exit_status, submission, model_stats, config,
  mini_version}, messages, trajectory_format, instance_id}`. Messages as the model API wrote them: chat completions
  (`tool_calls`, `tool` messages, `reasoning_content`), or Responses API items (a `{"object": "response", "output":
  [...]}` turn; `function_call_output` items), or text (see below). The last message, `{"role": "exit"}`, carries
  the submission: it is the harness's, left out (counted in the batch notes);
* 1.x (`trajectory_format: "mini-swe-agent-1"`) and the oldest, a bare list of `{role, content}` messages: text
  protocol, the command in a fenced block (```bash, ```mswea_bash_command) of the assistant's turn and its output
  the next user turn. Each command (the harness's own `extra.actions` when recorded, else the turn's one shell
  block) becomes one `bash` call, and that user turn its result; a turn the harness rejected (no block, or several)
  has no call, and the format error after it stays a user message.
Reasoning (`reasoning_content`, a Responses turn's reasoning summary) is kept per message. The task is
`instance_id` (else the file name); the sandbox is the image the run's `config.environment` names; the grade comes
from a SWE-bench report in the batch (the harness's evaluation tree may sit beside the output tree), else the run
is ungraded."""

from __future__ import annotations

from cowork_assets.ingest import reasoning, recount
from cowork_assets.ingest.formats import _common, swebench_report
from cowork_assets.sandbox import sandbox

NAME = "mini_swe_agent"
PRIORITY = 30
RECORDS = recount.ONE
CODING_CATEGORIES = (NAME,)  # its runs are coding-agent runs
# mini-swe-agent ends a run with a bash command that echoes its sentinel (older releases: another sentinel).
TERMINAL_COMMANDS = ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "echo MINI_SWE_AGENT_FINAL_OUTPUT")
ROLES = ("system", "user", "assistant", "tool")


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
            isinstance(doc.get("messages"), list) and isinstance(doc.get("info"), dict) and "exit_status" in doc["info"]
        )
    return _is_chat(doc) and any(
        m.get("role") == "assistant" and _common.fenced_command(_common.text(m.get("content"))) for m in doc
    )


def _response_turn(response: dict) -> dict:
    """A Responses API turn (`{"object": "response", "output": [items]}`) as one assistant message."""
    out = {"role": "assistant", "content": None, "reasoning_content": None}
    texts, reasoning, calls = [], [], []
    for item in response.get("output") or []:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            texts.append(_common.text(item.get("content")) or "")
        elif kind == "reasoning":
            parts = [*(item.get("summary") or []), *(item.get("content") or [])]
            reasoning += [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
        elif kind == "function_call":
            calls.append(_common.call(item.get("call_id") or item["id"], item["name"], item.get("arguments")))
    out["content"] = "\n\n".join(t for t in texts if t) or None
    out["reasoning_content"] = "\n\n".join(reasoning) or None
    return {**out, "tool_calls": calls} if calls else out


def _returned(m: dict) -> dict:
    """The message of the raw chat completion mini-swe-agent keeps in `extra` (where some providers' reasoning is)."""
    choices = ((m.get("extra") or {}).get("response") or {}).get("choices") or [{}]
    found = choices[0].get("message") if isinstance(choices[0], dict) else None
    return _common.mapping(found)


def conversation(raw: list, notes) -> list[dict]:
    """The run's messages in the contract's shape, whatever model API wrote them."""
    out = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict):
            raise _common.Malformed(f"message {i} is not an object")
        if m.get("object") == "response":
            out.append(_response_turn(m))
        elif m.get("type") == "function_call_output":
            out.append({"role": "tool", "tool_call_id": m.get("call_id"), "content": _common.text(m.get("output"))})
        elif m.get("role") == "exit":
            notes["mini_swe_agent_exit_messages_left_out"] += 1
        elif m.get("role") in ROLES:
            message = {"role": m["role"], "content": _common.text(m.get("content"))}
            if m["role"] == "assistant":
                message["content"], found = reasoning.assistant_turn(m)
                message["reasoning_content"] = found or reasoning.field_reasoning(_returned(m))
                calls = [
                    _common.call(c["id"], c["function"]["name"], c["function"].get("arguments"))
                    for c in m.get("tool_calls") or []
                ]
                message |= {"tool_calls": calls} if calls else {}
            if m["role"] == "tool":
                message |= {"tool_call_id": m.get("tool_call_id"), "content": message["content"] or ""}
            out.append(message | ({"extra": m["extra"]} if isinstance(m.get("extra"), dict) else {}))
        else:  # a message of a kind this reader does not know: left out, counted
            notes[f"mini_swe_agent_{m.get('role') or m.get('type')}_messages_left_out"] += 1
    if not any(m.get("tool_calls") for m in out):
        out = _common.text_protocol(out, _action)
    return [{k: v for k, v in m.items() if k != "extra"} for m in out]


def _action(m: dict) -> tuple[str, dict] | None:
    """The command the harness ran for a text turn: its recorded action, else the turn's one shell block."""
    extra = m.get("extra")
    if isinstance(extra, dict) and "actions" in extra:
        actions = [a.get("command") for a in extra.get("actions") or [] if isinstance(a, dict)]
        command = actions[0] if len(actions) == 1 and isinstance(actions[0], str) else None
    else:
        command = _common.fenced_command(m.get("content"))
    return None if command is None else ("bash", {"command": command})


def convert(doc, sample, batch) -> dict:
    stem = sample.path.name.removesuffix(".json").removesuffix(".traj")
    if isinstance(doc, list):
        raw, info, instance = doc, {}, stem
    else:
        raw, info, instance = doc["messages"], doc.get("info") or {}, str(doc.get("instance_id") or stem)
    messages = conversation(raw, batch.notes)
    config = info.get("config") or {}
    model = (config.get("model") or {}).get("model_name") or "unknown"
    environment = config.get("environment") or {}
    return _common.trajectory(
        batch.unique_id(stem, sample),
        {
            "task_id": instance,
            "category": NAME,
            "request": _common.first_user_text(messages),
            "tools": _common.called_tools(messages) or [_common.BASH_TOOL],
            "initial_state": sandbox(instance, {"image": environment.get("image")}),
        },
        str(model),
        messages,
        grade=swebench_report.grade(batch, instance),
    )


def records(sample, batch):
    yield _common.record_line(
        1, lambda: convert(sample.document, sample, batch), sample.head, "bad_mini_swe_agent_record"
    )
