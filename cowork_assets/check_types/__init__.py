"""Grader check types: each declared once, in one module of this package (found by `cowork_assets.plugins`),
as a `CheckType` (`_base.py`) named `TYPE`: how it is validated, which evidence values it yields, how it is
replayed on a transcript, the counts and tools the consistency rules compare, and how it explains a replay that
disagrees with the verdict a benchmark recorded. Evidence, task findings and
the RL datasets call it. A new check type is one module here defining `TYPE`; nothing else changes.

A check of a type no module declares is kept and reported (`unknown_check_type`), never a crash.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any, Protocol

import orjson

from cowork_assets.check_types._base import Call, CheckType, Turn
from cowork_assets.plugins import discover
from cowork_assets.values import named_value, record_value


class CheckTypeModule(Protocol):
    TYPE: CheckType


@cache
def types() -> dict[str, CheckType]:
    """Every declared check type by name."""
    return {module.TYPE.name: module.TYPE for module in discover(__name__, CheckTypeModule).values()}


def type_of(check: dict) -> CheckType | None:
    return types().get(check.get("type")) if isinstance(check.get("type"), str) else None


def parse(checks_json: str) -> list[dict]:
    """A package's checks: the objects of its JSON list (anything else is not a check)."""
    checks = orjson.loads(checks_json)
    return [c for c in checks if isinstance(c, dict)] if isinstance(checks, list) else []


def check_key(check: dict) -> Any:
    """A check's id as the key its results are found by: as given when a JSON scalar, else its JSON text (an id
    written as a list or an object cannot be a key)."""
    found = check.get("id")
    return (
        found
        if found is None or isinstance(found, str | int | float)
        else orjson.dumps(found, option=orjson.OPT_NON_STR_KEYS).decode()
    )


def weight(check: dict) -> float:
    w = check.get("weight", 1.0)
    return float(w) if isinstance(w, (int, float)) and not isinstance(w, bool) else 1.0


def evidence_values(check: dict, enums: frozenset[str]) -> Iterator[tuple[str, str]]:
    """(source, value) of each evidence value the check names: its explicit `evidence` list, then what its
    type derives (record-like values from structured data; named words kept unless too small)."""
    explicit = check.get("evidence")
    for v in explicit if isinstance(explicit, list) else []:
        if (value := named_value(v)) is not None:
            yield "explicit", value
    kind = type_of(check)
    for how, v in kind.evidence(check, enums) if kind else ():
        value = named_value(v) if how == "named" else record_value(v, enums)
        if value is not None:
            yield "derived", value


class Plan:
    """A task's checks arranged for replaying runs: each call meets only the checks on its tool (and those that
    see every call). Checks are referred to by their position in `checks`."""

    def __init__(self, checks: list[dict]):
        self.checks = [(c, type_of(c)) for c in checks]
        self.prepared = [kind.prepare(c) if kind else None for c, kind in self.checks]
        self.on_tool: dict[str, list[tuple[int, CheckType]]] = {}
        self.on_every_call = [(i, kind) for i, (_, kind) in enumerate(self.checks) if kind and kind.every_call]
        for i, (c, kind) in enumerate(self.checks):
            if kind and not kind.every_call and (tool := kind.tool(c)) and type(kind).on_call is not CheckType.on_call:
                self.on_tool.setdefault(tool, []).append((i, kind))
        self.per_turn = [(i, kind) for i, (_, kind) in enumerate(self.checks) if kind and kind.per_turn]
        # What a result reports of each check: (its id, as given and as text; type; weight; decidable).
        self.described = [
            (check_key(c), str(c.get("id")), str(c.get("type")), weight(c), kind is not None and kind.is_decidable(c))
            for c, kind in self.checks
        ]


Turns = list[tuple[str | None, list[Call]]]


def replay(plan: Plan, turns: Turns) -> tuple[list[int | None], list[dict]]:
    """Each check's first satisfying 1-based assistant turn (None: never, or not decidable) and its replay state.

    `turns`: the run's assistant turns in order, each (content, its calls: `Call`s or (tool, arguments JSON))."""
    prepared, on_tool, on_every_call = plan.prepared, plan.on_tool, plan.on_every_call
    calls_seen: dict[str, int] = {}
    states: list[dict] = [{} for _ in plan.checks]
    seen: list[int | None] = [None] * len(plan.checks)
    for turn, (content, calls) in enumerate(turns, 1):
        for call in calls:
            call = call if isinstance(call, Call) else Call(*call)
            name = call.name
            calls_seen[name] = calls_seen.get(name, 0) + 1
            meets = on_tool.get(name, ())
            if not meets and not on_every_call:
                continue
            try:
                args = orjson.loads(call.arguments)
            except orjson.JSONDecodeError:
                args = {}
            for i, kind in (*meets, *on_every_call):
                if kind.on_call(prepared[i], states[i], call, args, calls_seen[name]) and seen[i] is None:
                    seen[i] = turn
        if plan.per_turn:
            text = Turn(content)
            for i, kind in plan.per_turn:
                if seen[i] is None and kind.on_turn(prepared[i], states[i], text):
                    seen[i] = turn
    firsts = [
        kind.at_end(prepared[i], states[i], seen[i], calls_seen, len(turns)) if kind else None
        for i, (_, kind) in enumerate(plan.checks)
    ]
    return firsts, states


def first_turns(checks: list[dict] | Plan, turns: Turns) -> dict[Any, int | None]:
    """The 1-based assistant turn at which each check is first satisfied (None: never, or not decidable), by
    check id: a repeated check id is met when the first of its checks is."""
    plan = checks if isinstance(checks, Plan) else Plan(checks)
    return by_id(plan, replay(plan, turns)[0])


def by_id(plan: Plan, firsts: list[int | None]) -> dict[Any, int | None]:
    """`replay`'s first turns by check id."""
    out: dict[Any, int | None] = {}
    for (c, _), turn in zip(plan.checks, firsts):
        key = check_key(c)
        earlier = out.get(key)
        out[key] = turn if earlier is None else earlier if turn is None else min(earlier, turn)
    return out
