"""Plain markdown helpers (no Dagster): tables for check metadata and dataset cards."""

from __future__ import annotations

from collections.abc import Iterable


class Markdown(str):
    """A string meant to be rendered as markdown (the Dagster wiring turns it into MetadataValue.md)."""


MISSING = "—"  # how a missing value reads in a table


def cell(value) -> str:
    return MISSING if value is None else str(value).replace("|", "\\|").replace("\n", " ")


EXAMPLES = 20  # rows of an examples table


def table(header: Iterable[str], rows: Iterable[Iterable], total: int | None = None) -> Markdown:
    """A Markdown table; with `total`, the rows are a sample of that many and a line says how many are shown."""
    header, rows = list(header), list(rows)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    if total is not None:
        lines += ["", f"{len(rows)} of {total} shown"]
    return Markdown("\n".join(lines))
