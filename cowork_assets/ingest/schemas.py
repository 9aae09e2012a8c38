"""pandera (polars) models of the staging tables: the one definition of their columns.

The Parquet writers take their Arrow schema from these models, and an asset check validates each
written partition against them.
"""

from __future__ import annotations

import polars as pl
import pandera.polars as pa
import pyarrow as pa_arrow

from cowork_assets.ingest.record import ROLES

TOOL_CALL = pl.Struct({"id": pl.String, "type": pl.String, "name": pl.String, "arguments": pl.String})


class Trajectories(pa.DataFrameModel):
    """One row per parsed trajectory."""

    batch: str
    trajectory_id: str = pa.Field(unique=True)
    task_id: str
    task_hash: str = pa.Field(str_length=16)
    category: str
    teacher_model: str
    teacher_run_id: str = pa.Field(nullable=True)
    teacher_role: str = pa.Field(isin=["teacher", "student"])
    group_id: str = pa.Field(nullable=True)
    grade_score: float = pa.Field(nullable=True)
    grade_passed: bool = pa.Field(nullable=True)
    grade_checks: str = pa.Field(nullable=True, description="JSON object: check id -> passed")
    n_messages: pl.Int32 = pa.Field(ge=1)
    n_user_turns: pl.Int32 = pa.Field(ge=0)
    n_tool_calls: pl.Int32 = pa.Field(ge=0)
    chars_total: pl.Int64 = pa.Field(ge=0)
    chars_observations: pl.Int64 = pa.Field(ge=0)
    tokens_total: pl.Int64 = pa.Field(ge=0)
    raw_file: str
    raw_record: pl.Int64 = pa.Field(ge=1)


class Messages(pa.DataFrameModel):
    """One row per message; tool calls normalised (arguments always a JSON string)."""

    batch: str
    trajectory_id: str
    message_index: pl.Int32 = pa.Field(ge=0)
    role: str = pa.Field(isin=list(ROLES))
    content: str = pa.Field(nullable=True)
    tool_calls: pl.List(TOOL_CALL)
    tool_call_id: str = pa.Field(nullable=True)
    name: str = pa.Field(nullable=True)
    chars: pl.Int64 = pa.Field(ge=0, description="content plus tool-call names and arguments")
    tokens: pl.Int64 = pa.Field(ge=0, description="tiktoken count of the same text")


class ToolCalls(pa.DataFrameModel):
    """One row per tool call, with the observation that answered it (if any)."""

    batch: str
    trajectory_id: str
    message_index: pl.Int32 = pa.Field(ge=0)
    call_index: pl.Int32 = pa.Field(ge=0)
    call_id: str
    tool_name: str
    arguments: str
    observation_index: pl.Int32 = pa.Field(nullable=True)
    observation: str = pa.Field(nullable=True)
    observation_chars: pl.Int64 = pa.Field(nullable=True, ge=0)


class TaskPackages(pa.DataFrameModel):
    """One row per distinct task package seen in the batch (keyed by its content hash)."""

    batch: str
    task_hash: str = pa.Field(unique=True, str_length=16)
    task_id: str
    category: str
    request: str
    initial_state: str = pa.Field(description="JSON")
    tools: str = pa.Field(description="JSON list of tool definitions")
    checks: str = pa.Field(description="JSON list of grading checks")
    n_tools: pl.Int32 = pa.Field(ge=0)
    n_checks: pl.Int32 = pa.Field(ge=0)
    check_types: pl.List(pl.String)
    n_trajectories: pl.Int32 = pa.Field(ge=1)
    first_trajectory_id: str


class Quarantine(pa.DataFrameModel):
    """One row per raw record that could not be parsed, with where it was and why."""

    batch: str
    raw_file: str
    raw_record: pl.Int64 = pa.Field(ge=1)
    reason: str
    detail: str
    excerpt: str


MODELS: dict[str, type[pa.DataFrameModel]] = {
    "trajectories": Trajectories,
    "messages": Messages,
    "tool_calls": ToolCalls,
    "task_packages": TaskPackages,
    "quarantine": Quarantine,
}


def polars_schema(model: type[pa.DataFrameModel]) -> pl.Schema:
    return pl.Schema({name: col.dtype.type for name, col in model.to_schema().columns.items()})


def arrow_schema(model: type[pa.DataFrameModel]) -> pa_arrow.Schema:
    return pl.DataFrame(schema=polars_schema(model)).to_arrow().schema


def empty(model: type[pa.DataFrameModel]) -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema(model))
