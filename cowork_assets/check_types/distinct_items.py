"""`distinct_items`: the run creates at least `expected` distinct items with `tool`, told apart by the
argument `key` (normalised). One rule everywhere: the check needs a tool name, a key name and an integer
`expected`; otherwise it is invalid and counts for nothing. The key values a run creates are evidence."""

from __future__ import annotations

from cowork_assets.check_types._base import CheckType
from cowork_assets.values import normalise


def spec(check: dict) -> tuple[str, str, int] | None:
    """(tool, key, expected), or None when the check lacks one of them."""
    tool, key, expected = check.get("tool"), check.get("key"), check.get("expected")
    if isinstance(tool, str) and isinstance(key, str) and isinstance(expected, int) and not isinstance(expected, bool):
        return tool, key, expected
    return None


class DistinctItems(CheckType):
    name = "distinct_items"
    per_turn = True

    def problems(self, check):
        return [] if spec(check) else ["needs a tool name, a key name and an integer expected count"]

    def created(self, check):
        found = spec(check)
        return found[:2] if found else None

    def count(self, check):
        found = spec(check)
        return (found[2], "expected") if found else None

    def prepare(self, check):
        return spec(check)

    def on_call(self, found, state, call, args, calls_of_tool):
        if found is not None and isinstance(args, dict):
            state.setdefault("items", set()).add(normalise(str(args.get(found[1], ""))))
        return False

    def on_turn(self, found, state, turn):
        return found is not None and len(state.get("items", ())) >= found[2]

    def tool(self, check):
        found = spec(check)
        return found[0] if found else super().tool(check)

    rank = 10

    def why_unmet(self, unmet, calls_seen):
        """Unmet although the run made as many calls as the check expects: the grader counts calls (duplicate
        creations counted as distinct items)."""
        for u in unmet:
            if u.prepared and calls_seen.get(u.prepared[0], 0) >= u.prepared[2]:
                tool, key, expected = u.prepared
                calls = calls_seen.get(tool, 0)  # none, for an expected count of 0
                detail = f"{u.check.get('id')}: {calls} {tool} calls, fewer than {expected} distinct {key} values"
                return "grader counts calls", detail
        return None


TYPE = DistinctItems()
