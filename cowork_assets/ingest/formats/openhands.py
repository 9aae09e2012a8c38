"""OpenHands evaluation output (`output.jsonl`: one run a line, `{instance_id | question_id, instruction,
history, test_result, metadata, ...}`), the resolver's output (`{issue: {owner, repo, number}, base_commit,
instruction, history, success, ...}`: task `owner/repo#number`, graded by its `success`), and an event stream
saved as a bare JSON list of events.

`history` is a list of events: V0 events (`action` / `observation`, linked by `cause`), V1 typed events of
the software-agent-sdk (`kind: ActionEvent / ObservationEvent / MessageEvent / SystemPromptEvent /
AgentErrorEvent`, an observation linked to its call by `tool_call_id`), or, in older releases,
`[action, observation]` pairs. A V1 action is one call, its `thought` the assistant text, its
`reasoning_content` the turn's reasoning; actions of one model response are one assistant turn; an
observation's text is its `content` parts, else its `output` or `message`. When the history holds no user
message, `instruction` is the first one (V1 outputs keep the task there, not in the events).
The system and user messages become messages; each agent action that is a tool call becomes an
assistant turn (its text and the call as the model returned it, from `tool_call_metadata`; older
actions without it become a call named after the action with its `args`), answered by the observation
caused by it. `finish` is the call the model made (a terminal call, unanswered) when it was a tool call, else the
final assistant message; bookkeeping events (recall, state changes)
are left out, and an error observation that answers no call (or a V1 observation of a call the history does not
hold) becomes a user message, as the agent saw it.
The task is `instance_id`; the grade comes from a SWE-bench report beside the file, else from the output's
own `test_result` (`test_result_grade`), else the run is ungraded."""

from __future__ import annotations

from cowork_assets.ingest import reasoning, recount
from cowork_assets.ingest.formats import _common, swebench_report
from cowork_assets.sandbox import sandbox

NAME = "openhands"
PRIORITY = 30
CODING_CATEGORIES = (NAME,)  # its runs are coding-agent runs
RECORDS = {"lines": recount.LINES, "document": recount.ONE}
TERMINAL_TOOLS = frozenset({"finish"})  # AgentFinishAction, when it is written as a tool call
CALL_NAMES = {"run": "execute_bash", "run_ipython": "execute_ipython_cell"}
NOT_ARGUMENTS = ("thought", "is_input", "blocking", "hidden", "confirmation_state", "security_risk")
SKIPPED_ACTIONS = ("recall", "change_agent_state", "null", "condensation")


def looks_like(obj) -> bool:
    """An evaluation output line (keyed by `instance_id` or `question_id`), or the resolver's (`issue`)."""
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("history"), list)
        and ("instance_id" in obj or "question_id" in obj or isinstance(obj.get("issue") or obj.get("pr_review"), dict))
    )


def _instance(run: dict) -> tuple[str, dict]:
    """(the run's task id, what its log says of the repository): an evaluation's instance, or the resolver's issue
    (`owner/repo#number`, its repository and base commit)."""
    if "instance_id" in run or "question_id" in run:
        return str(run["instance_id"] if "instance_id" in run else run["question_id"]), run.get("instance") or {}
    issue = run.get("issue") or run.get("pr_review") or {}
    repo = f"{issue.get('owner')}/{issue.get('repo')}" if issue.get("owner") and issue.get("repo") else None
    return f"{repo or 'issue'}#{issue.get('number')}", {"repo": repo, "base_commit": run.get("base_commit")}


def is_event_list(doc) -> bool:
    """A bare JSON list of V0 events (`id`, `source`, and an `action` or `observation`)."""
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(isinstance(e, dict) and "source" in e and ("action" in e or "observation" in e) for e in doc)
    )


def detect(sample) -> bool:
    if sample.is_lines:
        return looks_like(sample.first_record)
    return is_event_list(sample.document)


def events(history: list) -> list[dict]:
    """Current events as they are; older `[action, observation]` pairs flattened, linked by id and cause."""
    out = []
    for i, item in enumerate(history):
        if isinstance(item, list):
            action, observation = (item + [{}, {}])[:2]
            out.append({"id": f"pair_{i}", **action})
            if observation and observation.get("observation") not in (None, "null"):
                out.append({"cause": f"pair_{i}", **observation})
        else:
            out.append(item)
    return out


def _model_call(event: dict) -> tuple[str | None, dict | None]:
    """(the model's text, its tool call) for an action, from the model response when recorded."""
    meta = event.get("tool_call_metadata") or {}
    choices = (meta.get("model_response") or {}).get("choices") or [{}]
    message = choices[0].get("message") or {}
    call = next((c for c in message.get("tool_calls") or [] if c.get("id") == meta.get("tool_call_id")), None)
    if call is not None:
        return _common.text(message.get("content")), _common.call(
            call["id"], call["function"]["name"], call["function"].get("arguments")
        )
    args = event.get("args") or {}
    call_id = meta.get("tool_call_id") or f"call_{event.get('id')}"
    name = meta.get("function_name") or CALL_NAMES.get(event["action"], event["action"])
    return args.get("thought") or None, _common.call(
        call_id, name, {k: v for k, v in args.items() if k not in NOT_ARGUMENTS}
    )


def v1_text(part) -> str | None:
    """A V1 observation or message as text: its content parts, else its output or message."""
    if not isinstance(part, dict):
        return _common.text(part)
    for key in ("content", "output", "message", "text"):
        if (text := _common.text(part.get(key))) is not None:
            return text
    return None


def v1_conversation(history: list) -> list[dict]:
    out: list[dict] = []
    response = None  # the model response the last assistant turn came from
    called = set()  # the calls made so far: an observation of a call not in the history is what the agent saw
    for i, e in enumerate(history):
        kind = e.get("kind") if isinstance(e, dict) else None
        if kind == "SystemPromptEvent":
            out.append({"role": "system", "content": v1_text({"content": e.get("system_prompt")}) or ""})
        elif kind == "MessageEvent":
            message = e.get("llm_message") or {}
            role = "user" if e.get("source") == "user" else "assistant"
            out.append({"role": role, "content": v1_text(message) or ""})
        elif kind == "ActionEvent":
            call = e.get("tool_call") or {}
            call_id, name = call.get("id") or e.get("tool_call_id"), call.get("name") or e.get("tool_name")
            if not call_id or not name:
                raise _common.Malformed(f"history event {i} (an ActionEvent) names no tool call")
            made = _common.call(call_id, name, call.get("arguments"))
            called.add(call_id)
            if response is not None and e.get("llm_response_id") == response and out[-1].get("tool_calls"):
                out[-1]["tool_calls"].append(made)  # another call of the same model response
            else:
                thought, found = reasoning.assistant_turn(e, e.get("thought"))
                out.append(
                    {"role": "assistant", "content": thought or None, "reasoning_content": found, "tool_calls": [made]}
                )
            response = e.get("llm_response_id")
            continue
        elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
            content = (
                v1_text(e.get("observation"))
                if kind == "ObservationEvent"
                else e.get("error") or e.get("rejection_reason")
            )
            if e.get("tool_call_id") in called:
                out.append({"role": "tool", "tool_call_id": e["tool_call_id"], "content": content or ""})
            elif content:
                out.append({"role": "user", "content": content})
        response = None
    return out


def conversation(history: list) -> list[dict]:
    for i, e in enumerate(history):
        if not isinstance(e, dict | list):
            raise _common.Malformed(f"history event {i} is not an event object")
    if any(isinstance(e, dict) and "kind" in e for e in history[:3]):
        return v1_conversation(history)
    out, call_of = [], {}  # action event id -> the call id its observation answers
    responses = set()  # model responses already shown: a response with several calls keeps its text once
    for e in events(history):
        source, action = e.get("source"), e.get("action")
        if action == "system":
            out.append({"role": "system", "content": (e.get("args") or {}).get("content") or e.get("message")})
        elif action == "message":
            role = "user" if source == "user" else "assistant"
            out.append({"role": role, "content": (e.get("args") or {}).get("content") or e.get("message")})
        elif action == "finish" and not (e.get("tool_call_metadata") or {}).get("tool_call_id"):
            out.append({"role": "assistant", "content": (e.get("args") or {}).get("final_thought") or e.get("message")})
        elif action is not None and action not in SKIPPED_ACTIONS:
            content, call = _model_call(e)
            response = ((e.get("tool_call_metadata") or {}).get("model_response") or {}).get("id")
            if response in responses:
                content = None
            responses.add(response)
            call_of[str(e.get("id"))] = call["id"]
            out.append({"role": "assistant", "content": content, "tool_calls": [call]})
        elif e.get("observation") is not None and e.get("observation") not in SKIPPED_ACTIONS:
            call_id = (e.get("tool_call_metadata") or {}).get("tool_call_id") or call_of.get(str(e.get("cause")))
            if call_id is not None:
                out.append({"role": "tool", "tool_call_id": call_id, "content": _common.text(e.get("content")) or ""})
            elif e.get("observation") == "error":
                out.append({"role": "user", "content": _common.text(e.get("content")) or e.get("message")})
    return out


def test_result_grade(result) -> dict | None:
    """The grade an OpenHands evaluation wrote into its output (None: ungraded): a SWE-bench evaluation's
    `report.resolved` (or `resolved`), or `final_score {total, result}` (score result / total). A result that
    holds a grader error, or no verdict, is ungraded, not a fail."""
    if not isinstance(result, dict) or result.get("error"):
        return None
    report = result.get("report") if isinstance(result.get("report"), dict) else result
    if isinstance(report.get("resolved"), bool):
        passed = report["resolved"]
        return {"score": float(passed), "passed": passed, "checks": {"test_result.resolved": passed}}
    final = result.get("final_score")
    if isinstance(final, dict) and isinstance(final.get("total"), int | float) and final["total"] > 0:
        score = min(1.0, max(0.0, float(final.get("result") or 0) / final["total"]))
        return {"score": score, "passed": score == 1.0, "checks": {"test_result.final_score": score == 1.0}}
    return None


def convert(run: dict, stem: str, sample, batch) -> dict:
    instance, repository = _instance(run)
    messages = conversation(run["history"])
    instruction = _common.text(run.get("instruction"))
    if instruction and not any(m["role"] == "user" for m in messages):
        system = int(bool(messages) and messages[0]["role"] == "system")
        messages.insert(system, {"role": "user", "content": instruction})
    metadata = run.get("metadata") or {}
    model = (metadata.get("llm_config") or metadata.get("llm") or {}).get("model") or "unknown"
    grade = swebench_report.grade(batch, instance) or test_result_grade(run.get("test_result"))
    for key in ("correct", "success"):  # a benchmark keyed by question_id; the resolver's own verdict
        if grade is None and isinstance(run.get(key), bool):
            grade = {"score": float(run[key]), "passed": run[key], "checks": {key: run[key]}}
    return _common.trajectory(
        batch.unique_id(f"{stem}:{instance}", sample),
        {
            "task_id": instance,
            "category": "openhands",
            "request": instruction or _common.first_user_text(messages),
            "tools": _common.called_tools(messages),
            "initial_state": sandbox(instance, repository),
        },
        str(model),
        messages,
        grade=grade,
    )


def _event_list(sample, stem: str, batch) -> dict:
    request = _common.first_user_text(conversation(sample.document))
    run = {"history": sample.document, "question_id": _common.task_id_of("openhands", request)}
    return convert(run, stem, sample, batch)


def records(sample, batch):
    stem = sample.path.name.split(".")[0]
    if not sample.is_lines:  # a bare event list: one run, its task the request's hash
        yield _common.record_line(1, lambda: _event_list(sample, stem, batch), sample.head, "bad_openhands_record")
        return
    yield from _common.json_lines(
        sample,
        looks_like,
        lambda run, record: convert(run, stem, sample, batch),
        "bad_openhands_record",
        "an object with instance_id (or question_id, or issue) and history",
    )
