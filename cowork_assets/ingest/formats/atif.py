"""Harbor's ATIF trajectories (`*.json`, one trajectory per file, `schema_version` "ATIF-...").

Steps become messages: `system`/`user` steps their text, an `agent` step an assistant message with its
`reasoning_content` and `tool_calls`, followed by one tool message per `observation.results` entry. A result
names its call by `source_call_id`; ATIF makes that optional, so a result without it answers the step's call when
the step made exactly one, and otherwise stays an observation with no call id (Terminus-2 writes such files).
List-valued messages are joined like chat content. Tools come from `agent.tool_definitions` (null-valued
schema keywords dropped), else from the calls seen. A `session_id` another file of the batch already used
is made unique with the file name. There is no grader in the file: no checks; the grade comes from Harbor's
trial `result.json` beside it (`harbor_result`), else the run is ungraded.

Sub-trajectories (ATIF v1.6+): a result's `subagent_trajectory_ref [{session_id, trajectory_path}]` points at
another ATIF file of the batch, e.g. a context-summarization run. That file is its own trajectory, and its
`teacher.run_id` names the parent (`subagent-of:<parent session_id>`), so lineage leads from one to the other;
in the parent, a result that only holds such a reference is no message, and a step left with nothing else is none.
Its steps marked `is_copied_context` repeat the parent's conversation: they become one user message holding
their text, context to the sub-run, so no assistant turn of the parent is trained on twice. Sub-trajectories
embedded in the file (`subagent_trajectories`) are not read; they are counted in the batch notes."""

from __future__ import annotations

from cowork_assets.ingest import reasoning, recount
from cowork_assets.ingest.formats import _common, harbor_result

NAME = "atif"
PRIORITY = 20
CODING_CATEGORIES = (NAME,)  # its runs are coding-agent runs
RECORDS = recount.ONE
# The calls harness agents end a run with: OpenHands' finish, Terminus-2's task-complete call.
TERMINAL_TOOLS = frozenset({"finish", "mark_task_complete", "task_complete"})
ROLE = {"system": "system", "user": "user", "agent": "assistant"}


def looks_like(obj) -> bool:
    return isinstance(obj, dict) and str(obj.get("schema_version", "")).startswith("ATIF") and "steps" in obj


def detect(sample) -> bool:
    return looks_like(sample.document)


def parents(batch) -> dict[str, str]:
    """Sub-trajectory (its session id, and its file name) -> the session id of the ATIF run that refers to it."""
    out = {}
    for sample in batch.auxiliary(NAME):
        doc = sample.document
        for step in doc.get("steps") or [] if isinstance(doc, dict) else []:
            results = (step.get("observation") or {}).get("results") if isinstance(step, dict) else None
            for result in results or []:
                for ref in (result.get("subagent_trajectory_ref") or []) if isinstance(result, dict) else []:
                    for key in (ref.get("session_id"), str(ref.get("trajectory_path") or "").rsplit("/", 1)[-1]):
                        if key:
                            out[str(key)] = str(doc.get("session_id") or sample.path.stem)
    return out


def copied_context(steps: list) -> list:
    """The steps with the run's copied context (`is_copied_context`) as one user step holding their text."""
    copied = [s for s in steps if isinstance(s, dict) and s.get("is_copied_context")]
    if not copied:
        return steps
    text = "\n\n".join(t for s in copied if (t := _common.text(s.get("message"))))
    first = steps.index(copied[0])
    rest = [s for s in steps if not (isinstance(s, dict) and s.get("is_copied_context"))]
    return [*rest[:first], {"source": "user", "message": text}, *rest[first:]]


def _step_messages(step: dict, i: int) -> list[dict]:
    if not isinstance(step, dict) or step.get("source") not in ROLE:
        raise _common.Malformed(f"step {i} has no source ATIF writes (system, user, agent)")
    message = {"role": ROLE[step["source"]], "content": _common.text(step.get("message"))}
    if message["role"] == "assistant":
        message["content"], found = reasoning.assistant_turn(step, step.get("message"))
        message |= {"reasoning_content": found} if found else {}
    calls = step.get("tool_calls") or []
    if calls:
        message["tool_calls"] = [_common.call(c["tool_call_id"], c["function_name"], c.get("arguments")) for c in calls]
    names = {c["tool_call_id"]: c["function_name"] for c in calls}
    only = calls[0]["tool_call_id"] if len(calls) == 1 else None
    out = [message]
    results = (step.get("observation") or {}).get("results") or []
    for r in results:
        call_id = r.get("source_call_id") or only
        content = r.get("content")
        if not content and r.get("subagent_trajectory_ref"):
            continue  # it only points at sub-trajectories (a context summarisation's): no message of this run
        out.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "name": names.get(call_id),
                "content": _common.text(content) if isinstance(content, list) else str(content or ""),
            }
        )
    if len(out) == 1 and results and not calls and not (message["content"] or "").strip():
        return []  # a step that only referred to sub-trajectories
    return out


def convert(obj: dict, sample, batch) -> dict:
    messages = [m for i, step in enumerate(copied_context(obj["steps"])) for m in _step_messages(step, i)]
    if obj.get("subagent_trajectories"):
        batch.notes["atif_embedded_subagent_trajectories_not_read"] += len(obj["subagent_trajectories"])
    agent = obj.get("agent") or {}
    request = _common.first_user_text(messages)
    session = str(obj.get("session_id") or sample.path.stem)
    of = batch.once("atif_parents", lambda: parents(batch))
    parent = of.get(session) or of.get(sample.path.name)
    result = harbor_result.result_for(batch, sample, sub_trajectory=bool(parent))
    task_id = str((result or {}).get("task_name") or _common.task_id_of("atif", request))
    tools = _common.tool_definitions(agent.get("tool_definitions"), batch.notes) or _common.called_tools(messages)
    trajectory_id = batch.unique_id(session, sample)
    return _common.trajectory(
        trajectory_id,
        {"task_id": task_id, "category": "atif", "request": request, "tools": tools},
        str(agent.get("model_name") or agent.get("name") or "unknown"),
        messages,
        grade=harbor_result.grade(result),
        run_id=f"subagent-of:{parent}" if parent else None,
    )


def records(sample, batch):
    yield _common.record_line(1, lambda: convert(sample.document, sample, batch), sample.head, "bad_atif_record")
