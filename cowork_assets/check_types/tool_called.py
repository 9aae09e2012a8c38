"""`tool_called`: the run calls `tool`, with arguments matching `args` when given (a subset, compared
normalised), at least `min_calls` times. Its argument values are evidence: the grader compares them."""

from __future__ import annotations

from cowork_assets.check_types._base import CheckType
from cowork_assets.values import leaves, normalise


def args_match(expected, actual) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and args_match(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(map(args_match, expected, actual))
    return normalise(str(expected)) == normalise(str(actual))


class ToolCalled(CheckType):
    name = "tool_called"

    def problems(self, check):
        out = [] if self.tool(check) else ["has no tool name"]
        if not isinstance(check.get("args", {}), dict):
            out.append("args is not an object")
        if not _count_ok(check.get("min_calls")):
            out.append("min_calls is not a positive integer")
        return out

    def evidence(self, check, enums):
        args = check.get("args") or {}
        return (("derived", leaf) for leaf in leaves(args))

    def count(self, check):
        n = check.get("min_calls")
        return (n, "min_calls") if isinstance(n, int) and not isinstance(n, bool) else None

    def on_call(self, check, state, call, args, calls_of_tool):
        return args_match(check.get("args") or {}, args) and calls_of_tool >= _min_calls(check)

    rank = 40

    def why_unmet(self, unmet, calls_seen):
        return "reference call not made", ", ".join(u.label for u in unmet)

    def why_met(self, labels):
        return "recorded call missing", labels


def _min_calls(check: dict) -> int:
    """The calls the check asks for: `min_calls` as an integer, 1 when unset or not a number (`problems` names it)."""
    try:
        return int(check.get("min_calls") or 1)
    except (TypeError, ValueError, OverflowError):
        return 1


def _count_ok(n) -> bool:
    return n is None or isinstance(n, int) and not isinstance(n, bool) and n >= 1


TYPE = ToolCalled()
