"""Harbor's ATIF trajectories (`*.json`, one trajectory per file, `schema_version` "ATIF-...").

Steps become messages: `system`/`user` steps their text, an `agent` step an assistant message with its
`tool_calls`, followed by one tool message per `observation.results` entry. A result names its call by
`source_call_id`; ATIF makes that optional, so a result without it answers the step's call when the step
made exactly one, and otherwise stays an observation with no call id (Terminus-2 writes such files).
List-valued messages are joined like chat content. Tools come from `agent.tool_definitions` (null-valued
schema keywords dropped), else from the calls seen. A `session_id` another file of the batch already used
is made unique with the file name. There is no grader in the file: no checks; the grade comes from Harbor's
trial `result.json` beside it (`harbor_result`), else the run is ungraded."""

from __future__ import annotations

from cowork_assets.ingest.formats import _common, harbor_result

NAME = "atif"
PRIORITY = 20
# The calls harness agents end a run with: OpenHands' finish, Terminus-2's task-complete call.
TERMINAL_TOOLS = frozenset({"finish", "mark_task_complete", "task_complete"})
ROLE = {"system": "system", "user": "user", "agent": "assistant"}


def looks_like(obj) -> bool:
    return isinstance(obj, dict) and str(obj.get("schema_version", "")).startswith("ATIF") and "steps" in obj


def detect(sample) -> bool:
    return looks_like(sample.document)


def _step_messages(step: dict, i: int) -> list[dict]:
    if not isinstance(step, dict) or step.get("source") not in ROLE:
        raise _common.Malformed(f"step {i} has no source ATIF writes (system, user, agent)")
    message = {"role": ROLE[step["source"]], "content": _common.text(step.get("message"))}
    calls = step.get("tool_calls") or []
    if calls:
        message["tool_calls"] = [_common.call(c["tool_call_id"], c["function_name"], c.get("arguments")) for c in calls]
    names = {c["tool_call_id"]: c["function_name"] for c in calls}
    only = calls[0]["tool_call_id"] if len(calls) == 1 else None
    out = [message]
    for r in (step.get("observation") or {}).get("results") or []:
        call_id = r.get("source_call_id") or only
        content = r.get("content")
        out.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "name": names.get(call_id),
                "content": _common.text(content) if isinstance(content, list) else str(content or ""),
            }
        )
    return out


def convert(obj: dict, sample, batch) -> dict:
    messages = [m for i, step in enumerate(obj["steps"]) for m in _step_messages(step, i)]
    agent = obj.get("agent") or {}
    request = _common.first_user_text(messages)
    result = harbor_result.result_for(batch, sample)
    task_id = str((result or {}).get("task_name") or _common.task_id_of("atif", request))
    tools = _common.tool_definitions(agent.get("tool_definitions"), batch.notes) or _common.called_tools(messages)
    trajectory_id = batch.unique_id(str(obj.get("session_id") or sample.path.stem), sample)
    return _common.trajectory(
        trajectory_id,
        {"task_id": task_id, "category": "atif", "request": request, "tools": tools},
        str(agent.get("model_name") or agent.get("name") or "unknown"),
        messages,
        grade=harbor_result.grade(result),
    )


def records(sample, batch):
    yield _common.record_line(1, lambda: convert(sample.document, sample, batch), sample.head, "bad_atif_record")
