"""Plain markdown helpers (no Dagster): tables for check metadata and dataset cards."""

from __future__ import annotations

from collections.abc import Iterable


class Markdown(str):
    """A string meant to be rendered as markdown (the Dagster wiring turns it into MetadataValue.md)."""


MISSING = "—"  # how a missing value reads in a table


def cell(value) -> str:
    return MISSING if value is None else str(value).replace("|", "\\|").replace("\n", " ")


def table(header: Iterable[str], rows: Iterable[Iterable]) -> Markdown:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return Markdown("\n".join(lines))
