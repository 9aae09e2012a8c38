"""OpenAI chat JSONL: each line `{"messages": [...], "tools": [...]}` (optionally `id`, `model`), as chat datasets
and exported agent runs (SWE-smith, SWE-Gym, nemo-style SFT records) are written.

Content given as a list of parts is joined into text; an assistant's reasoning is kept, wherever its provider
wrote it (`ingest/reasoning.py`). A record may
say how its run was graded, in the fields such records use: `resolved` or `success` (booleans), `reward` or
`score` (numbers in [0, 1]), `test_result` (an OpenHands evaluation's); else it is ungraded (and reaches SFT only
with `accept_ungraded`). A record with an `instance_id` is a coding-agent run (category `coding_chat`, the coding
budget): its task is the instance (its sandbox what the record says of `repo`, `base_commit`, `image`), and when
its messages hold no tool calls, its actions are in the text — an XML-style `<function=...>` call or a shell block
— each a call answered by the user turn after it. Any other record is a chat: its task the first user message's
hash, no checks (evidence is grounding only). Detected from the file's first records."""

from __future__ import annotations

from cowork_assets.ingest import reasoning, recount
from cowork_assets.ingest.formats import _common, openhands
from cowork_assets.sandbox import sandbox

NAME = "openai_chat"
PRIORITY = 40
RECORDS = recount.LINES
CODING = "coding_chat"
CODING_CATEGORIES = (CODING,)
ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}


def looks_like(obj) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("messages"), list) and "schema" not in obj


def detect(sample) -> bool:
    return sample.is_lines and looks_like(sample.first_record)


def grade_of(obj: dict) -> dict | None:
    """The grade a record's own fields give its run (None: ungraded)."""
    for key in ("resolved", "success"):
        if isinstance(obj.get(key), bool):
            return {"score": float(obj[key]), "passed": obj[key], "checks": {key: obj[key]}}
    for key in ("reward", "score"):
        value = obj.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
            return {"score": float(value), "passed": value == 1, "checks": {key: value == 1}}
    return openhands.test_result_grade(obj.get("test_result"))


def _message(m, i: int) -> dict:
    if not isinstance(m, dict) or m.get("role") not in ROLES:
        raise _common.Malformed(f"message {i} has no role a chat record holds ({', '.join(ROLES)})")
    out = {"role": ROLES[m["role"]], "content": _common.text(m.get("content"))}
    if out["role"] == "assistant":
        out["content"], found = reasoning.assistant_turn(m)
        out |= {"reasoning_content": found} if found else {}
    if m.get("tool_calls"):
        out["tool_calls"] = [
            _common.call(str(c.get("id")), c["function"]["name"], c["function"].get("arguments"))
            for c in m["tool_calls"]
        ]
    if out["role"] == "tool":
        out |= {"tool_call_id": m.get("tool_call_id"), "name": m.get("name"), "content": out["content"] or ""}
    return out


def convert(obj: dict, stem: str, record: int, notes) -> dict:
    messages = [_message(m, i) for i, m in enumerate(obj["messages"])]
    request = _common.first_user_text(messages)
    instance = obj.get("instance_id")
    if isinstance(instance, str) and instance:
        if not any(m.get("tool_calls") for m in messages):
            messages = _common.text_protocol(messages)
        task = {
            "task_id": instance,
            "category": CODING,
            "initial_state": sandbox(instance, obj),
            "tools": _common.tool_definitions(obj.get("tools"), notes) or _common.called_tools(messages),
        }
    else:
        task = {
            "task_id": _common.task_id_of("chat", request),
            "category": "chat",
            "tools": _common.tool_definitions(obj.get("tools"), notes),
        }
    return _common.trajectory(
        str(obj.get("id") or obj.get("traj_id") or f"{stem}:{record}"),
        {**task, "request": request},
        str(obj.get("model") or "unknown"),
        messages,
        grade=grade_of(obj),
    )


def records(sample, batch):
    stem = sample.path.name.split(".")[0]
    return _common.json_lines(
        sample,
        looks_like,
        lambda obj, record: convert(obj, stem, record, batch.notes),
        "bad_openai_record",
        "an object with a messages list",
    )
