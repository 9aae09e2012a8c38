"""Tasks built from scenario parts, and runs (teacher or student trajectories) rendered as chat."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import orjson

from cowork_assets.synthetic import services as S
from cowork_assets.synthetic import vocab as V
from cowork_assets.synthetic.scenarios import TEMPLATES, Part, Step, bulk_review

SYSTEM = (
    "You are a workspace assistant for {user}. You can call tools for: {services}. Use tools to read "
    "and change the workspace; never invent ids. Today is 2026-11-29."
)


@dataclass
class Task:
    task_id: str
    category: str
    parts: list[Part]
    package: dict  # the `task` object of cowork.trajectory/v1
    template: str


def build_task(rng: random.Random, task_id: str, template: str | None = None, multi_turn: bool | None = None) -> Task:
    ids = S.Ids(rng)
    names = list(TEMPLATES)
    first = template or rng.choice(names)
    make = bulk_review if first == "bulk_review" else TEMPLATES[first]
    parts = [make(rng, ids)]
    if multi_turn if multi_turn is not None else rng.random() < 0.4:
        parts.append(TEMPLATES[rng.choice([n for n in names if n != first])](rng, ids))
    if len(parts) > 1:  # check ids must stay unique across parts
        for i, part in enumerate(parts, 1):
            for check in part.checks:
                check["id"] = f"{check['id']}_{i}"
            part.wrong_fails = {f"{c}_{i}" for c in part.wrong_fails}
    services = list(dict.fromkeys(s for p in parts for s in p.services))
    state: dict = {}
    for part in parts:
        for key, records in part.state.items():
            state.setdefault(key, [])
            state[key] += [r for r in records if r not in state[key]]
    request = parts[0].request + "".join(f" Then: {p.request}" for p in parts[1:])
    package = {
        "task_id": task_id,
        "category": "multi_turn" if len(parts) > 1 else "single_turn",
        "request": request,
        "initial_state": state,
        "tools": [t for s in services for t in S.TOOLS[s]],
        "checks": [c for p in parts for c in p.checks],
    }
    return Task(task_id, package["category"], parts, package, first)


def _say(rng: random.Random, step: Step) -> str | None:
    if rng.random() < 0.15:
        return None
    what = step.tool.split("_", 1)[1].replace("_", " ")
    return f"{rng.choice(V.OPENERS)} {rng.choice(V.LOOKUP_VERBS)} via {what} {rng.choice(V.ASIDES)}."


def render(
    rng: random.Random, task: Task, fail_parts: set[int], user: str
) -> tuple[list[dict], dict[str, bool], list[str]]:
    """Messages of one run, the per-check outcome, and the workspace values the run relies on.
    Parts in `fail_parts` follow their wrong plan."""
    services = ", ".join(dict.fromkeys(s for p in task.parts for s in p.services))
    messages = [{"role": "system", "content": SYSTEM.format(user=user, services=services)}]
    outcome: dict[str, bool] = {}
    needed: list[str] = []
    n_call = 0
    for i, part in enumerate(task.parts):
        fail = i in fail_parts
        lead = "" if i == 0 else rng.choice(["Thanks! ", "Great. ", "One more thing: ", "Also, ", ""])
        messages.append({"role": "user", "content": lead + part.request})
        for step in part.wrong_steps if fail else part.steps:
            n_call += 1
            call_id = f"call_{n_call}"
            messages.append(
                {
                    "role": "assistant",
                    "content": _say(rng, step),
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": step.tool, "arguments": _args(rng, step.args)},
                        }
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": call_id, "name": step.tool, "content": step.observation})
        needed += part.wrong_needed if fail else part.needed
        answer = part.wrong_answer if fail else part.answer
        messages.append({"role": "assistant", "content": f"{answer} {rng.choice(V.CLOSERS)}"})
        for check in part.checks:
            outcome[check["id"]] = not (fail and check["id"] in part.wrong_fails)
    return messages, outcome, needed


def _args(rng: random.Random, args: dict):
    # Both encodings occur in the wild: OpenAI's JSON string, and a plain object.
    return orjson.dumps(args).decode() if rng.random() < 0.8 else dict(args)


def grade(task: Task, outcome: dict[str, bool]) -> dict:
    weights = {c["id"]: float(c.get("weight", 1.0)) for c in task.package["checks"]}
    score = sum(w for cid, w in weights.items() if outcome[cid]) / sum(weights.values())
    return {"score": round(score, 4), "passed": all(outcome.values()), "checks": outcome}


_DIGIT_COMMA = re.compile(r"(?<=\d),(?=\d{3})")


def locate(messages: list[dict], value: str) -> dict | None:
    """Where a needed value is first used (tool-call argument or assistant text) and first seen before."""
    forms = {value.casefold(), _DIGIT_COMMA.sub("", value).casefold()}

    def hit(text: str | None) -> tuple[int, int]:
        if not text:
            return -1, 0
        hits = sorted((p, len(f)) for f in forms if (p := text.casefold().find(f)) >= 0)
        return hits[0] if hits else (-1, 0)

    def find(text: str | None) -> int:
        return hit(text)[0]

    for used, msg in enumerate(messages):
        if msg["role"] != "assistant":
            continue
        calls = " ".join(str(c["function"]["arguments"]) for c in msg.get("tool_calls") or [])
        if find(msg.get("content")) >= 0 or find(calls) >= 0:
            for seen, earlier in enumerate(messages[:used]):
                offset, length = hit(earlier.get("content"))
                if offset >= 0:
                    return {
                        "used_at": used,
                        "found_at": seen,
                        "role": earlier["role"],
                        "offset": offset,
                        "length": length,
                        "message_chars": len(earlier["content"]),
                    }
            return {
                "used_at": used,
                "found_at": None,
                "role": None,
                "offset": None,
                "length": None,
                "message_chars": None,
            }
    return None
