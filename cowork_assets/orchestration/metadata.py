"""Helpers that turn tables and counts into Dagster metadata the UI renders well."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from urllib.parse import quote

import dagster as dg
import pandera.polars as pa

from cowork_assets.markdown import Markdown, table
from cowork_assets.store.registry import TABLES

LOCATION_NAME = "cowork_curate"  # workspace.yaml's name for the code location
REPOSITORY = "__repository__"  # the name Dagster gives the repository of a `Definitions` object
MARKDOWN_INLINE = 1000  # Markdown metadata shorter than this is shown on the asset's page; longer, behind a click


def trace_link(sample_id: str) -> str:
    """A Markdown link to the `trace_sample` launchpad with the sample id filled in: one click to it, one to
    launch."""
    config = quote(json.dumps({"sample_id": sample_id}, separators=(",", ":")), safe="")
    return f"[{sample_id}](/locations/{REPOSITORY}@{LOCATION_NAME}/jobs/trace_sample/playground/setup?config={config})"


def written(root: str, table: str, batch: str, rows: int) -> dict:
    """Metadata of a batch's partition of a table: its rows, where it lies, and the rows of every batch together
    (the asset page's row count is the latest partition's; `rows_all_batches` is the table's)."""
    return {
        "dagster/row_count": rows,
        "rows_all_batches": rows + TABLES[table].rows_of_other_batches(root, batch),
        "path": dg.MetadataValue.path(TABLES[table].committed_file(root, batch)),
    }


def column_schema(model: type[pa.DataFrameModel]) -> dg.TableSchema:
    return dg.TableSchema(
        columns=[
            dg.TableColumn(name, str(col.dtype), description=col.description or "")
            for name, col in model.to_schema().columns.items()
        ]
    )


def md_table(header: Iterable[str], rows: Iterable[Iterable]) -> dg.MetadataValue:
    return dg.MetadataValue.md(table(header, rows))


def is_series(key: str) -> bool:
    """Whether a per-batch check's number means something drawn batch after batch: a rate or a share (a setting
    such as `max_duplicate_rate` does not)."""
    return key.endswith(("_rate", "_share")) and not key.startswith(("max_", "min_"))


def as_metadata(values: Mapping[str, object], batch: str | None = None) -> dict:
    """Report values for Dagster: Markdown strings render as markdown. For a result of one batch, counts are
    shown as text beside the batch's name (the UI would draw every batch's counts as one time series, which
    means nothing); its rates and shares stay numbers, so the UI plots them batch after batch."""

    def value(k, v):
        if isinstance(v, Markdown):
            return dg.MetadataValue.md(v)
        if batch is not None and isinstance(v, (int, float)) and not isinstance(v, bool) and not is_series(k):
            return dg.MetadataValue.text(str(v))
        return v

    return ({"batch": batch} if batch is not None else {}) | {k: value(k, v) for k, v in values.items()}


def counts_md(counts: Mapping[str, int], key: str = "reason", value: str = "records") -> dg.MetadataValue:
    return md_table([key, value], sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) or [("(none)", 0)])
