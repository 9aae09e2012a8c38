"""Truncation strategies: how a tool observation longer than the allowance is cut. One module each.

A strategy module has a one-line docstring, `VERL_SIDE` (verl's `tool_response_truncate_side` it matches,
or None) and `kept(observations, allowance, context)`: for each long observation (`trajectory_id`,
`message_index`, `length`, `cores` — the evidence spans first seen in it, possibly empty) the `kept_spans`
(sorted, disjoint [start, end) ranges) and `overflow_chars` (kept beyond the allowance). Rendering the text,
deciding which evidence survives and counting what each keeps are the same for all (curation/truncate.py).
A module that keeps every at-risk value by construction may say so (`KEEPS_ALL_EVIDENCE = True`) and give
`kept_chars(observations, allowance, context)`: the truncation sweep then counts its characters without
building its spans. The package is the registry: a new module is found without editing any other code.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import polars as pl

SPAN = pl.Struct({"start": pl.Int64, "end": pl.Int64})


def _discover() -> dict[str, ModuleType]:
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            found[info.name] = importlib.import_module(f"{__name__}.{info.name}")
    return found


def names() -> tuple[str, ...]:
    return tuple(STRATEGIES)


def strategy(name: str) -> ModuleType:
    if name not in STRATEGIES:
        raise ValueError(f"unknown truncation strategy {name!r}; use one of {', '.join(STRATEGIES)}")
    return STRATEGIES[name]


def spans(*pairs: tuple[pl.Expr, pl.Expr]) -> pl.Expr:
    """A list of kept spans from (start, end) expressions (built as an array: `concat_list` of two structs
    was 50x slower)."""
    return pl.concat_arr(pl.struct(start=s.cast(pl.Int64), end=e.cast(pl.Int64)) for s, e in pairs).arr.to_list()


def positional(observations: pl.DataFrame, kept_spans: pl.Expr) -> pl.DataFrame:
    """The rows of a cut by position only: never any overflow."""
    return observations.with_columns(kept_spans=kept_spans, overflow_chars=pl.lit(0, pl.Int64))


STRATEGIES: dict[str, ModuleType] = _discover()  # last: the modules import the helpers above
