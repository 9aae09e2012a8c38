"""`db_match`: the end state (a database, an environment) equals the one the reference's writes produce, as
tau-bench (`r_actions`: the database's hash against `gt_data_hash`) and tau2 (`DB`, `ENV_ASSERTION` in its
`reward_basis`) grade. Those benchmarks compare states, not calls, so replay compares the writes that make them:

* `writes`: the reference's state-changing actions, `[{tool, args}]`. Without it the check is not decidable
  (the reference is unknown, or holds writes the agent's conversation does not show);
* `read_only`: the tools that change no state; a call of any other tool is a write;
* `match`: `exact` (a database: the run's successful writes are the reference's, none missing, none extra) or
  `includes` (environment assertions: every reference write is made; other writes may be too);
* `expected_state` (optional): the benchmark's identifier of the end state it compared runs against
  (tau-bench's `gt_data_hash`), which the ground-truth rules of `grounds.py` read.

A reference write is made by a successful call (its result is not an error, `_base.ERROR_RESULT`: a failed call
changed nothing) of its tool whose arguments equal the reference's on the reference's keys, objects inside them
too (an extra key the tool ignores changes nothing): numbers by value (2 = 2.0), every list as a multiset
(tau-bench stores `item_ids` sorted: their order changes no state), other values exactly; a replacement that maps
an item to itself (`item_ids[i] == new_item_ids[i]`) changes nothing and is left out. The reference's first
write is not required of a run that made it before any write of its own and saw it fail: from the starting state
the environment rejects it, as it did when the benchmark replayed the reference (tau-bench's references hold such
writes, e.g. a refund to a payment method the order cannot take, then the one that works); the same goes for
the next reference write while the ones before it were rejected so.
`state_check` builds the check from a format's reference actions with the rules below.

Which tools are read-only (`StateRules`), first rule that applies: the setting `state_changing_tools` or
`read_only_tools` names the tool; its definition says so (MCP `annotations.readOnlyHint`, an HTTP endpoint
`GET ...` / `HEAD ...`); its name's first word is a read verb (`READ_VERBS`). Free-text arguments (the setting
`free_text_arguments`, unless the tool's schema restricts the argument to an `enum`) are not compared.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from cowork_assets.check_types._base import Call, CheckType

READ_VERBS = frozenset(
    "get find search list lookup look check calculate compute think can count describe fetch query read show "
    "view verify validate is has preview estimate".split()
)
READ_ONLY_TOOLS = ("transfer_to_human_agents",)  # tau-bench's and tau2's hand-off: it ends the chat, writes nothing
FREE_TEXT_ARGUMENTS = ("summary", "reason", "note", "comment", "explanation")
_FIRST_WORD = re.compile(r"[a-z]+|[A-Z][a-z]*")
_READ_METHODS = ("GET", "HEAD")
_HTTP_METHODS = (*_READ_METHODS, "POST", "PUT", "PATCH", "DELETE")


@dataclass(frozen=True)
class StateRules:
    """Which tools change state and which arguments are free text (the settings of the same names)."""

    read_only_tools: tuple[str, ...] = READ_ONLY_TOOLS
    state_changing_tools: tuple[str, ...] = ()
    free_text_arguments: tuple[str, ...] = FREE_TEXT_ARGUMENTS

    def is_read_only(self, name: str, definition: dict | None = None) -> bool:
        if name in self.state_changing_tools:
            return False
        if name in self.read_only_tools:
            return True
        definition = definition or {}
        hint = (definition.get("annotations") or {}).get("readOnlyHint")
        if isinstance(hint, bool):
            return hint
        method = str(definition.get("endpoint") or "").split(" ", 1)[0].upper()
        if method in _HTTP_METHODS:
            return method in _READ_METHODS
        word = _FIRST_WORD.match(name)
        return word is not None and word.group(0).lower() in READ_VERBS

    def compared(self, args: dict, definition: dict | None) -> dict:
        """The arguments a write is compared on: all but the free-text ones."""
        properties = ((definition or {}).get("parameters") or {}).get("properties") or {}
        return {
            k: v for k, v in args.items() if k not in self.free_text_arguments or "enum" in (properties.get(k) or {})
        }


DEFAULT_RULES = StateRules()


def state_check(
    check_id: str,
    actions: list[tuple[str, dict]] | None,
    tools: list[dict],
    rules: StateRules,
    match: str = "exact",
    expected_state: str | None = None,
) -> dict:
    """The check for a benchmark that grades the end state: `actions` are the reference's (tool, arguments) in
    order (None: not known, so not decidable); `tools` the package's tool definitions (OpenAI or cowork style)."""
    defined = {d["name"]: d for d in map(_definition, tools) if isinstance(d.get("name"), str)}
    names = sorted({*defined, *(tool for tool, _ in actions or ())})
    check: dict[str, Any] = {"id": check_id, "type": "db_match", "match": match}
    if actions is not None:
        check["writes"] = [
            {"tool": tool, "args": rules.compared(args, defined.get(tool))}
            for tool, args in actions
            if not rules.is_read_only(tool, defined.get(tool))
        ]
        check["read_only"] = [n for n in names if rules.is_read_only(n, defined.get(n))]
    if expected_state is not None:
        check["expected_state"] = expected_state
    return check


def _definition(tool: Any) -> dict:
    """A tool definition's own fields, from an OpenAI `{type: function, function: {...}}` wrapper or as given."""
    if not isinstance(tool, dict):
        return {}
    return tool["function"] if isinstance(tool.get("function"), dict) else tool


def shape(value: Any) -> Any:
    """What of a value is compared: an object's keys (each with the shape of its value), a list's items' shape."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        out = None
        for v in value:
            out = merge(out, shape(v))
        return out
    return None


def merge(a: Any, b: Any) -> Any:
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: merge(a.get(k), b.get(k)) for k in {*a, *b}}
    return a if a is not None else b


def canonical(value: Any, like: Any = None) -> Any:
    """A value in the form states are compared in: objects on the keys of `like` (a `shape`; on all their keys
    without one), lists as multisets, numbers by value."""
    if isinstance(value, dict):
        keys = like if isinstance(like, dict) else dict.fromkeys(value)
        return tuple(sorted((str(k), canonical(value.get(k), keys[k])) for k in keys))
    if isinstance(value, list):
        return ("list", *sorted((canonical(v, like) for v in value), key=repr))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


def without_self_maps(args: dict) -> dict:
    """Arguments without the pairs of a replacement (`K` and `new_K`, lists of one length) that map an item to
    itself."""
    out = dict(args)
    for key, old in args.items():
        new = args.get(f"new_{key}")
        if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
            kept = [(o, n) for o, n in zip(old, new) if o != n]
            out[key], out[f"new_{key}"] = [o for o, _ in kept], [n for _, n in kept]
    return out


def write_key(tool: str, args: Any, like: dict | None) -> tuple:
    """What one write is compared on: its tool and its arguments on the reference's shape (`like`)."""
    return tool, canonical(without_self_maps(args) if isinstance(args, dict) else {}, like)


@dataclass
class Prepared:
    writes: Counter  # write_key -> count, of the reference
    order: list[tuple]  # the reference's write_keys in order
    shapes: dict[str, dict]  # tool -> what its reference writes compare
    read_only: frozenset[str]
    exact: bool


class DbMatch(CheckType):
    name = "db_match"
    every_call = True

    def is_decidable(self, check):
        return isinstance(check.get("writes"), list)

    def problems(self, check):
        writes = check.get("writes")
        if writes is not None and not (
            isinstance(writes, list) and all(isinstance(w, dict) and isinstance(w.get("tool"), str) for w in writes)
        ):
            return ["writes is not a list of {tool, args}"]
        return [] if check.get("match", "exact") in ("exact", "includes") else ["match is not exact or includes"]

    def prepare(self, check):
        if not self.is_decidable(check) or self.problems(check):
            return None
        shapes: dict[str, dict] = {}
        for w in check["writes"]:
            shapes[w["tool"]] = merge(shapes.get(w["tool"]), shape(w.get("args") or {}))
        order = [write_key(w["tool"], w.get("args"), shapes[w["tool"]]) for w in check["writes"]]
        names = check.get("read_only")
        read_only = frozenset(n for n in names if isinstance(n, str)) if isinstance(names, list) else frozenset()
        return Prepared(Counter(order), order, shapes, read_only, check.get("match", "exact") == "exact")

    def on_call(self, prepared, state, call: Call, args, calls_of_tool):
        """A write is recorded (made, or failed while the state was the starting one); met when the writes so far
        reach the reference's state."""
        if prepared is None or call.name in prepared.read_only:
            return False
        if call.ok or not state.get("made"):
            state.setdefault("made" if call.ok else "failed_at_start", []).append((call.name, args))
        return call.ok and self.reached(prepared, state)

    def at_end(self, prepared, state, first, calls_seen, turns):
        if prepared is None or not self.reached(prepared, state):
            return None
        return first or (1 if turns else None)  # no write needed and none made: met from the start

    def reached(self, prepared: Prepared, state: dict) -> bool:
        missing, extra = self.difference(prepared, state)
        return not missing and not (prepared.exact and extra)

    def made(self, prepared: Prepared, state: dict, which: str = "made") -> Counter:
        """The run's successful writes (or, `which="failed_at_start"`, those that failed before it made one), by
        `write_key`."""
        return Counter(write_key(tool, args, prepared.shapes.get(tool)) for tool, args in state.get(which, ()))

    def difference(self, prepared: Prepared, state: dict) -> tuple[Counter, Counter]:
        """(reference writes not made, writes made that the reference does not have), by `write_key`. The
        reference's leading writes the run saw rejected from the starting state are not missing."""
        made, rejected, excused = self.made(prepared, state), self.made(prepared, state, "failed_at_start"), Counter()
        for key in prepared.order:
            if rejected[key] <= excused[key]:
                break
            excused[key] += 1
        return prepared.writes - made - excused, made - prepared.writes

    rank = 20

    def why_unmet(self, unmet, calls_seen):
        """The writes that differ from the reference's: one made with other values, one not made, one more."""
        u = next((u for u in unmet if u.prepared is not None), None)
        if u is None:
            return None
        missing, extra = self.difference(u.prepared, u.state)
        both = {tool for tool, _ in missing} & {tool for tool, _ in extra}
        reason = "write arguments differ" if both else "reference write not made" if missing else "extra write"
        parts = [f"not made: {_writes(missing)}"] if missing else []
        parts += [f"made: {_writes(extra)}"] if extra and u.prepared.exact else []
        return reason, "; ".join(parts)

    def why_met(self, labels):
        return "recorded state differs", (
            f"{labels}: the run made the reference's writes; the benchmark recorded another end state"
        )


def _writes(counted: Counter) -> str:
    return ", ".join(
        f"{tool}({', '.join(f'{k}={_short(_show(v))}' for k, v in args)})" + (f" x{n}" if n > 1 else "")
        for (tool, args), n in sorted(counted.items(), key=repr)
    )


def _show(value) -> str:
    """A value in `canonical` form, written back as compact JSON-like text."""
    if isinstance(value, tuple) and value[:1] == ("list",):
        return "[" + ", ".join(map(_show, value[1:])) + "]"
    if isinstance(value, tuple):
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in value) + "}"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


TYPE = DbMatch()
