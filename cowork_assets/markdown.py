"""Plain markdown helpers (no Dagster): tables for check metadata and dataset cards."""

from __future__ import annotations

from collections.abc import Iterable


class Markdown(str):
    """A string meant to be rendered as markdown (the Dagster wiring turns it into MetadataValue.md)."""


def table(header: Iterable[str], rows: Iterable[Iterable]) -> Markdown:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in row) + " |" for row in rows]
    return Markdown("\n".join(lines))
