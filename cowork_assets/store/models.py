"""Helpers every stage uses with its pandera (polars) models: the Arrow and polars schemas the Parquet writers
take from a model, an empty frame of it, validation of a written file against it, the shared struct types, and
nested list columns built from flat rows."""

from __future__ import annotations

from contextlib import nullcontext
from functools import cache

import pandera.errors
import pandera.polars as pa
import polars as pl
import pyarrow as pa_arrow
from pandera.config import ValidationDepth, config_context

from cowork_assets.store import storage

TOOL_CALL = pl.Struct({"id": pl.String, "type": pl.String, "name": pl.String, "arguments": pl.String})


def polars_schema(model: type[pa.DataFrameModel], without: tuple[str, ...] = ()) -> pl.Schema:
    """The model's columns as a polars schema (`without` some of them: a step's rows before it adds them)."""
    return pl.Schema({name: col.dtype.type for name, col in model.to_schema().columns.items() if name not in without})


def nest(frame: pl.DataFrame, items: pl.DataFrame, row: str, name: str, item: pl.Struct) -> pl.DataFrame:
    """`frame` with a list column `name`: the `item` structs of the `items` rows whose `row` (UInt32) is the
    frame's row number, in order; empty where there are none. Python code that yields nested values gives
    them as flat columns: polars builds nested rows from Python objects several times slower."""
    lists = items.group_by(row, maintain_order=True).agg(pl.struct(*item.to_schema()).alias(name))
    return (
        frame.with_row_index(row)
        .join(lists, on=row, how="left", maintain_order="left")
        .with_columns(pl.col(name).fill_null(pl.lit([], dtype=pl.List(item))))
        .drop(row)
    )


@cache  # every write asks (about a millisecond each: polars converts an empty frame); a model does not change
def arrow_schema(model: type[pa.DataFrameModel]) -> pa_arrow.Schema:
    return pl.DataFrame(schema=polars_schema(model)).to_arrow().schema


def empty(model: type[pa.DataFrameModel]) -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema(model))


IN_MEMORY_BYTES = 16 << 20  # a Parquet file this small is validated in memory


def validate_table(location: str, model: type[pa.DataFrameModel]) -> tuple[int, pl.DataFrame | None]:
    """(rows, failure cases or None) of a Parquet file against a pandera model, data checks included.

    pandera runs a query for each column and check. A small file is read once and validated in memory (a scan would
    decode it for each query: a third of the time), its queries on polars' in-memory engine (the streaming engine a
    lazy query takes by default costs 0.4 ms more per query: a third of a small batch's validations). A large one is
    validated over a lazy scan, each check reading only the columns it needs, so memory stays bounded and long text
    columns are not loaded just to confirm a type the file's schema already states.
    """
    size, _ = storage.stamps([location]).get(location, (None, None))  # none: the scan says why
    small = size is not None and size <= IN_MEMORY_BYTES
    frame = pl.read_parquet(location).lazy() if small else pl.scan_parquet(location)
    rows = frame.select(pl.len()).collect().item()
    engine = pl.Config(engine_affinity="in-memory") if small else nullcontext()
    with config_context(validation_depth=ValidationDepth.SCHEMA_AND_DATA), engine:
        try:
            model.validate(frame, lazy=True)
        except pandera.errors.SchemaErrors as exc:
            return rows, exc.failure_cases
    return rows, None


def function_calls(tool_calls: pl.Expr) -> pl.Expr:
    """Tool calls as chat messages carry them (OpenAI's shape): the name and arguments under `function`."""
    e = pl.element()
    return tool_calls.list.eval(
        pl.struct(
            id=e.struct.field("id"),
            type=e.struct.field("type"),
            function=pl.struct(name=e.struct.field("name"), arguments=e.struct.field("arguments")),
        )
    )


def message_chars(content: pl.Expr, tool_calls: pl.Expr, reasoning: pl.Expr) -> pl.Expr:
    """A message's characters, as every table and dataset counts them: reasoning, content, and each call's name
    and arguments."""
    e = pl.element()
    calls = tool_calls.list.eval(e.struct.field("name").str.len_chars() + e.struct.field("arguments").str.len_chars())
    return (
        reasoning.str.len_chars().fill_null(0) + content.str.len_chars().fill_null(0) + calls.list.sum().fill_null(0)
    ).cast(pl.Int64)
