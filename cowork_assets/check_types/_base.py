"""What a check type declares. Every hook has a neutral default, so a type states only what it does."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from cowork_assets.values import matches

# A tool result that reports an error: tau-bench and tau2 answer a failed call with `Error: ...` (tau2 also flags
# the message), the synthetic services with `{"error": ...}`. Such a call changed nothing. (Python and polars regex.)
ERROR_RESULT = r'(?i)^\s*(error\b|\{\s*"error")'
_ERROR_RESULT = re.compile(ERROR_RESULT)


def is_error(result: str | None) -> bool:
    return result is not None and _ERROR_RESULT.match(result) is not None


class Call(NamedTuple):
    """One tool call of a replayed run: the tool, its arguments (JSON text) and whether it succeeded (its
    result is not an error; a call never answered counts as succeeded)."""

    name: str
    arguments: str
    ok: bool = True


class Turn:
    """An assistant turn's text, in the normal forms checks compare, each computed once when first asked
    (`__getattr__` runs only until the form is stored: cheaper than `cached_property`, which locks in 3.11)."""

    def __init__(self, content: str | None):
        self.content = content or ""
        self.memo: dict = {}  # what `matches` keeps of the text while checks look for their values in it

    def __getattr__(self, name: str) -> str:
        if name == "lowered":
            self.lowered = self.content.lower()
            return self.lowered
        if name == "tau_bench":  # tau-bench's and tau2's form: lower-cased, commas removed
            self.tau_bench = self.content.lower().replace(",", "")
            return self.tau_bench
        raise AttributeError(name)

    def shows(self, norm: str) -> bool:
        """Whether the text shows a normalised value, as evidence is matched: case-folded, on token
        boundaries, a number also with its thousands separators."""
        return next(matches(norm, self.content, self.lowered, self.memo), None) is not None


class Unmet(NamedTuple):
    """A counted check the replay of a run did not meet, as its type explains it: the check, what `prepare` made
    of it, its replay state, and how a reason names it (`<id> (<type>)`)."""

    check: dict
    prepared: Any
    state: dict
    label: str


class CheckType:
    name: str = ""
    decidable: bool = True  # whether replaying the transcript's text and calls can decide it
    per_turn: bool = False  # whether `on_turn` runs after each assistant turn
    every_call: bool = False  # whether `on_call` sees every call, not only those of `tool(check)`

    # Parsing and validation
    def problems(self, check: dict) -> list[str]:
        """What is wrong with the check's own fields (an empty list: it is well formed)."""
        return []

    # Evidence
    def evidence(self, check: dict, enums: frozenset[str]) -> Iterator[tuple[str, Any]]:
        """(source, value) pairs the grader depends on, before the record-like filter: `derived` values
        come from structured data, `named` ones are words the grader looks for."""
        return iter(())

    def created(self, check: dict) -> tuple[str, str] | None:
        """(tool, argument key) whose values each run creates and the grader counts (their values are
        evidence per run), or None."""
        return None

    # Consistency
    def tool(self, check: dict) -> str | None:
        """The tool the check names, which the package must expose."""
        return check.get("tool") if isinstance(check.get("tool"), str) else None

    def count(self, check: dict) -> tuple[int, str] | None:
        """(the count the check expects, the field holding it), compared with counts the request states."""
        return None

    # Replay on a transcript
    def prepare(self, check: dict) -> Any:
        """Whatever the replay needs from the check, computed once per task (e.g. normalised keywords)."""
        return check

    def is_decidable(self, check: dict) -> bool:
        """Whether replay can decide this check (a type may decide only checks that carry what it needs)."""
        return self.decidable

    def on_call(self, prepared: Any, state: dict, call: Call, args: Any, calls_of_tool: int) -> bool:
        """A call to `tool(check)` (to any tool when `every_call`) with parsed `args`, the `calls_of_tool`-th of
        its tool so far: satisfied now?"""
        return False

    def on_turn(self, prepared: Any, state: dict, turn: Turn) -> bool:
        """After an assistant turn (its text in `turn`): satisfied now?"""
        return False

    def at_end(
        self, prepared: Any, state: dict, first: int | None, calls_seen: dict[str, int], turns: int
    ) -> int | None:
        """The first satisfying turn, given the one found while replaying."""
        return first

    # Disagreement with the verdict a benchmark recorded (validation/regrade.py). Types explain in `rank` order,
    # lowest first; a type with nothing to say leaves it to the next, and at last to "replay misses a check".
    rank: int = 100

    def why_unmet(self, unmet: list[Unmet], calls_seen: dict[str, int]) -> tuple[str, str] | None:
        """(reason, detail) for this type's checks the replay leaves unmet in a run the benchmark passed (in plan
        order; `calls_seen`: the run's calls per tool), or None."""
        return None

    def why_met(self, labels: str) -> tuple[str, str] | None:
        """(reason, detail) for this type's checks the replay meets in a run the benchmark failed, which the
        benchmark recorded as failed (`labels`: those checks, named), or None."""
        return None
