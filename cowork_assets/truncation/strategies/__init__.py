"""Truncation strategies: how a tool observation longer than the allowance is cut. One module each, found by
`cowork_assets.plugins` (a new module is found without editing any other code).

A strategy module (`Strategy`) has a one-line docstring, `VERL_SIDE` (verl's `tool_response_truncate_side` it
matches, or None) and `kept(observations, allowance, context)`: for each long observation (`trajectory_id`,
`message_index`, `length`, `cores` — the evidence spans first seen in it, possibly empty) the `kept_spans`
(sorted, disjoint [start, end) ranges, built with `truncation.spans.span_list`) and `overflow_chars` (kept beyond
the allowance). Rendering the text, deciding which evidence survives and counting what each keeps are the same
for all (curation/truncate.py). A module that keeps every at-risk value by construction may say so
(`KEEPS_ALL_EVIDENCE = True`) and give `kept_chars(observations, allowance, context)`: the truncation sweep then
counts its characters without building its spans. The sweep cuts at all its allowances at once: it gives
`allowance` as an expression, each row's own (`truncation.spans.allowance_of` takes an int or an expression).
"""

from __future__ import annotations

from functools import cache
from types import ModuleType
from typing import Protocol

import polars as pl

from cowork_assets.plugins import discover


class Strategy(Protocol):
    VERL_SIDE: str | None

    def kept(self, observations: pl.DataFrame, allowance: int | pl.Expr, context: int) -> pl.DataFrame: ...


@cache
def registry() -> dict[str, ModuleType]:
    """Every strategy by name, in name order."""
    return discover(__name__, Strategy)


def names() -> tuple[str, ...]:
    return tuple(registry())


def strategy(name: str) -> ModuleType:
    if name not in registry():
        raise ValueError(f"unknown truncation strategy {name!r}; use one of {', '.join(registry())}")
    return registry()[name]
