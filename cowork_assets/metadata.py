"""Helpers that turn tables and counts into Dagster metadata the UI renders well."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import dagster as dg
import pandera.polars as pa


def column_schema(model: type[pa.DataFrameModel]) -> dg.TableSchema:
    return dg.TableSchema(
        columns=[
            dg.TableColumn(name, str(col.dtype), description=col.description or "")
            for name, col in model.to_schema().columns.items()
        ]
    )


def md_table(header: Iterable[str], rows: Iterable[Iterable]) -> dg.MetadataValue:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in row) + " |" for row in rows]
    return dg.MetadataValue.md("\n".join(lines))


def counts_md(counts: Mapping[str, int], key: str = "reason", value: str = "records") -> dg.MetadataValue:
    return md_table([key, value], sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) or [("(none)", 0)])
