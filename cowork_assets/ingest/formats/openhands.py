"""OpenHands evaluation output (`output.jsonl`: one run a line, `{instance_id, instruction, history,
test_result, metadata, ...}`).

`history` is a list of events (current releases) or of `[action, observation]` pairs (older ones).
The system and user messages become messages; each agent action that is a tool call becomes an
assistant turn (its text and the call as the model returned it, from `tool_call_metadata`; older
actions without it become a call named after the action with its `args`), answered by the observation
caused by it. `finish` becomes the final assistant message; bookkeeping events (recall, state changes)
are left out, and an error observation that answers no call becomes a user message, as the agent saw it.
The task is `instance_id`; the grade comes from a SWE-bench report beside the file, else from the output's
own `test_result` (`test_result_grade`), else the run is ungraded."""

from __future__ import annotations

from cowork_assets.ingest.formats import _common, swebench_report

NAME = "openhands"
PRIORITY = 30
TERMINAL_TOOLS = frozenset({"finish"})  # AgentFinishAction, when it is written as a tool call
CALL_NAMES = {"run": "execute_bash", "run_ipython": "execute_ipython_cell"}
NOT_ARGUMENTS = ("thought", "is_input", "blocking", "hidden", "confirmation_state", "security_risk")
SKIPPED_ACTIONS = ("recall", "change_agent_state", "null", "condensation")


def looks_like(obj) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("history"), list) and "instance_id" in obj


def detect(sample) -> bool:
    return sample.is_lines and looks_like(sample.first_record)


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


def conversation(history: list) -> list[dict]:
    out, call_of = [], {}  # action event id -> the call id its observation answers
    responses = set()  # model responses already shown: a response with several calls keeps its text once
    for e in events(history):
        source, action = e.get("source"), e.get("action")
        if action == "system":
            out.append({"role": "system", "content": (e.get("args") or {}).get("content") or e.get("message")})
        elif action == "message":
            role = "user" if source == "user" else "assistant"
            out.append({"role": role, "content": (e.get("args") or {}).get("content") or e.get("message")})
        elif action == "finish":
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
    instance = str(run["instance_id"])
    messages = conversation(run["history"])
    model = ((run.get("metadata") or {}).get("llm_config") or {}).get("model") or "unknown"
    return _common.trajectory(
        batch.unique_id(f"{stem}:{instance}", sample),
        {
            "task_id": instance,
            "category": "openhands",
            "request": _common.text(run.get("instruction")) or _common.first_user_text(messages),
            "tools": _common.called_tools(messages),
            "initial_state": _common.sandbox(instance, run.get("instance")),
        },
        str(model),
        messages,
        grade=swebench_report.grade(batch, instance) or test_result_grade(run.get("test_result")),
    )


def records(sample, batch):
    stem = sample.path.name.split(".")[0]
    return _common.json_lines(
        sample,
        looks_like,
        lambda run, record: convert(run, stem, sample, batch),
        "bad_openhands_record",
        "an object with instance_id and history",
    )
