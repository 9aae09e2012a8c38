"""Codex CLI rollouts (`$CODEX_HOME/sessions/.../rollout-<thread id>.jsonl`): JSON Lines of
`{timestamp, type, payload}`, one session per file, its first line `session_meta {id, cwd, ...}`.

A file is one trajectory (raw_record 1) made of its `response_item` payloads, in order: `message`
(`role` user, assistant, developer or system; `content` parts `input_text` / `output_text` joined; a
developer message is a system message), `function_call {name, arguments, call_id}` and `custom_tool_call
{name, input, call_id}` as the assistant's calls (consecutive calls one turn), `function_call_output` and
`custom_tool_call_output {call_id, output}` as their results. `reasoning` is left out, and so are the
`event_msg` entries, which repeat the visible messages for the terminal, and `turn_context` (its `model` is
the run's model). A user message that is only an `<environment_context>` block is harness context, left out.
The task is the first request's hash; there is no grader: the run is ungraded. A line that is not JSON
quarantines the session, saying which.
"""

from __future__ import annotations

from cowork_assets.ingest import recount
from cowork_assets.ingest.formats import _common

NAME = "codex"
PRIORITY = 30
RECORDS = recount.ONE
ROLES = {"user": "user", "assistant": "assistant", "developer": "system", "system": "system"}
CALLS = ("function_call", "custom_tool_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")


def looks_like(obj) -> bool:
    return isinstance(obj, dict) and obj.get("type") == "session_meta" and isinstance(obj.get("payload"), dict)


def detect(sample) -> bool:
    return sample.is_lines and looks_like(sample.first_record)


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict) and "text" in p)


def _output(output) -> str:
    """A call's output: text, or Codex's `{output, metadata}` object, or content parts."""
    if isinstance(output, dict):
        return _text(output.get("output") or output.get("content"))
    return _text(output)


def messages_of(items: list[dict]) -> list[dict]:
    out: list[dict] = []
    for i, item in enumerate(items):
        kind = item.get("type")
        if kind == "message":
            role = ROLES.get(item.get("role"))
            if role is None:
                raise _common.Malformed(f"response item {i} is a message with no role Codex writes")
            text = _text(item.get("content"))
            if role == "user" and text.lstrip().startswith("<environment_context>"):
                continue
            out.append({"role": role, "content": text})
        elif kind in CALLS:
            if not item.get("call_id") or not item.get("name"):
                raise _common.Malformed(f"response item {i} is a {kind} with no call_id or name")
            args = item.get("arguments") if kind == "function_call" else {"input": item.get("input")}
            call = _common.call(item["call_id"], item["name"], args)
            if out and out[-1]["role"] == "assistant" and out[-1].get("tool_calls") and out[-1]["content"] is None:
                out[-1]["tool_calls"].append(call)  # calls made together
            elif out and out[-1]["role"] == "assistant" and not out[-1].get("tool_calls"):
                out[-1]["tool_calls"] = [call]  # the text the call came with
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind in OUTPUTS:
            out.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": _output(item.get("output"))})
    return out


def convert(lines: list[dict], sample, batch) -> dict:
    meta = lines[0]["payload"]
    items = [x["payload"] for x in lines if x.get("type") == "response_item" and isinstance(x.get("payload"), dict)]
    messages = messages_of(items)
    model = next(
        (
            x["payload"]["model"]
            for x in lines
            if x.get("type") == "turn_context" and (x.get("payload") or {}).get("model")
        ),
        meta.get("model") or "unknown",
    )
    return _common.trajectory(
        batch.unique_id(str(meta.get("id") or sample.path.stem), sample),
        _common.request_task(NAME, messages),
        str(model),
        messages,
    )


def records(sample, batch):
    yield _common.session_record(sample, "bad_codex_record", lambda lines: convert(lines, sample, batch))
