"""Helpers that turn tables and counts into Dagster metadata the UI renders well."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import dagster as dg
import pandera.polars as pa

from cowork_assets.markdown import Markdown, table


def column_schema(model: type[pa.DataFrameModel]) -> dg.TableSchema:
    return dg.TableSchema(
        columns=[
            dg.TableColumn(name, str(col.dtype), description=col.description or "")
            for name, col in model.to_schema().columns.items()
        ]
    )


def md_table(header: Iterable[str], rows: Iterable[Iterable]) -> dg.MetadataValue:
    return dg.MetadataValue.md(table(header, rows))


def as_metadata(values: Mapping[str, object], batch: str | None = None) -> dict:
    """Report values for Dagster: Markdown strings render as markdown. For a result of one batch, numbers are
    shown as text beside the batch's name: the UI would draw every batch's numbers as one time series."""

    def value(v):
        if isinstance(v, Markdown):
            return dg.MetadataValue.md(v)
        if batch is not None and isinstance(v, (int, float)) and not isinstance(v, bool):
            return dg.MetadataValue.text(str(v))
        return v

    return ({"batch": batch} if batch is not None else {}) | {k: value(v) for k, v in values.items()}


def counts_md(counts: Mapping[str, int], key: str = "reason", value: str = "records") -> dg.MetadataValue:
    return md_table([key, value], sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) or [("(none)", 0)])
