"""pandera (polars) models of the staging tables: the one definition of their columns.

The Parquet writers take their Arrow schema from these models, and an asset check validates each
written partition against them.
"""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from cowork_assets.ingest.roles import ROLES, TEACHER_ROLES
from cowork_assets.store.models import TOOL_CALL
from cowork_assets.store.table import Table


class Trajectories(pa.DataFrameModel):
    """One row per parsed trajectory."""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    trajectory_id: str = pa.Field(unique=True, description="unique within the batch")
    task_id: str = pa.Field(description="task the trajectory attempts")
    task_hash: str = pa.Field(str_length=16, description="content hash of its task package (task_packages key)")
    category: str = pa.Field(description="task category, e.g. single_turn / multi_turn")
    teacher_model: str = pa.Field(description="model that produced the trajectory")
    teacher_run_id: str = pa.Field(nullable=True, description="producer's run id")
    teacher_role: str = pa.Field(isin=list(TEACHER_ROLES), description="teacher demo or student RL rollout")
    group_id: str = pa.Field(nullable=True, description="rollout group for group-relative rewards")
    grade_score: float = pa.Field(nullable=True, description="recorded grader score")
    grade_passed: bool = pa.Field(nullable=True, description="recorded grader verdict")
    grade_checks: str = pa.Field(nullable=True, description="JSON object: check id -> passed")
    n_messages: pl.Int32 = pa.Field(ge=1, description="messages in the conversation")
    n_user_turns: pl.Int32 = pa.Field(ge=0, description="user messages (>1 means follow-ups)")
    n_tool_calls: pl.Int32 = pa.Field(ge=0, description="tool calls made by the assistant")
    chars_total: pl.Int64 = pa.Field(ge=0, description="sum of messages.chars")
    chars_observations: pl.Int64 = pa.Field(ge=0, description="characters in tool observations")
    raw_file: str = pa.Field(description="raw file, relative to raw_root")
    raw_record: pl.Int64 = pa.Field(ge=1, description="1-based line in the decompressed raw file")


class Messages(pa.DataFrameModel):
    """One row per message; tool calls normalised (arguments always a JSON string)."""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    trajectory_id: str = pa.Field(description="trajectory the message belongs to")
    message_index: pl.Int32 = pa.Field(ge=0, description="0-based position in the conversation")
    role: str = pa.Field(isin=list(ROLES), description="system / user / assistant / tool")
    content: str = pa.Field(nullable=True, description="message text (null for a pure tool-call turn)")
    reasoning_content: str = pa.Field(
        nullable=True, description="the assistant's reasoning for this turn, as the log kept it (null: none)"
    )
    tool_calls: pl.List(TOOL_CALL) = pa.Field(description="assistant calls: id, type, name, arguments (JSON string)")
    tool_call_id: str = pa.Field(nullable=True, description="for tool messages: the call answered")
    name: str = pa.Field(nullable=True, description="for tool messages: the tool name")
    chars: pl.Int64 = pa.Field(ge=0, description="content plus tool-call names and arguments")


class ToolCalls(pa.DataFrameModel):
    """One row per tool call, with the observation that answered it (if any)."""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    trajectory_id: str = pa.Field(description="trajectory the call belongs to")
    message_index: pl.Int32 = pa.Field(ge=0, description="assistant message that made the call")
    call_index: pl.Int32 = pa.Field(ge=0, description="position among that message's calls")
    call_id: str = pa.Field(description="the call's id")
    tool_name: str = pa.Field(description="tool called")
    arguments: str = pa.Field(description="arguments as a JSON string")
    observation_index: pl.Int32 = pa.Field(nullable=True, description="first later tool message answering it")
    observation: str = pa.Field(nullable=True, description="that observation's text (null: never answered)")
    observation_chars: pl.Int64 = pa.Field(nullable=True, ge=0, description="its length in characters")


class TaskPackages(pa.DataFrameModel):
    """One row per distinct task package seen in the batch (keyed by its content hash)."""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    task_hash: str = pa.Field(unique=True, str_length=16, description="sha256 prefix of the canonical task JSON")
    task_id: str = pa.Field(description="task id as given by the producer")
    category: str = pa.Field(description="task category")
    request: str = pa.Field(description="the user's request")
    initial_state: str = pa.Field(description="JSON")
    tools: str = pa.Field(description="JSON list of tool definitions")
    checks: str = pa.Field(description="JSON list of grading checks")
    n_tools: pl.Int32 = pa.Field(ge=0, description="tools exposed")
    n_checks: pl.Int32 = pa.Field(ge=0, description="grading checks")
    check_types: pl.List(pl.String) = pa.Field(description="type of each check, in order")
    n_trajectories: pl.Int32 = pa.Field(ge=1, description="trajectories of the batch using this package")
    first_trajectory_id: str = pa.Field(description="first trajectory seen with it")


class Quarantine(pa.DataFrameModel):
    """One row per raw record that could not be parsed, with where it was and why."""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    raw_file: str = pa.Field(description="raw file, relative to raw_root")
    raw_record: pl.Int64 = pa.Field(ge=1, description="1-based line in the decompressed raw file")
    reason: str = pa.Field(description="invalid_utf8, bad_json, wrong_type, missing_field, ... (docs/ingest.md)")
    detail: str = pa.Field(description="where and what, e.g. the offending field")
    excerpt: str = pa.Field(description="first 200 characters of the line, undecodable bytes replaced")


class SkippedInputs(pa.DataFrameModel):
    """One row per file or folder of a batch folder that no input format reads, and why."""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    raw_file: str = pa.Field(description="the file or folder, relative to raw_root")
    reason: str = pa.Field(description="why it was not read, e.g. 'a JSON list of 3 items that no format reads'")


# The stage's tables, collected by the registry (store/registry.py) in pipeline order.
TABLES = (
    Table(
        name="trajectories",
        model=Trajectories,
        group="staging",
        partitioned_by="batch",
        description="One row per parsed trajectory: task, teacher, grade, "
        "counts, characters, and lineage (raw_file, raw_record = 1-based line).",
        inputs=("raw_batches",),
    ),
    Table(
        name="messages",
        model=Messages,
        group="staging",
        partitioned_by="batch",
        description="One row per message, tool calls normalised (arguments as JSON "
        "strings), with character counts (tokens are counted once, for the published samples).",
        inputs=("raw_batches",),
    ),
    Table(
        name="tool_calls",
        model=ToolCalls,
        group="staging",
        partitioned_by="batch",
        description="One row per tool call with the observation that answered it and its length.",
        inputs=("raw_batches",),
    ),
    Table(
        name="task_packages",
        model=TaskPackages,
        group="staging",
        partitioned_by="batch",
        description="One row per distinct task package (request, initial state, tools, checks) in the batch.",
        inputs=("raw_batches",),
    ),
    Table(
        name="quarantine",
        model=Quarantine,
        group="staging",
        partitioned_by="batch",
        description="Raw records that could not be parsed: file, 1-based record, reason, detail, excerpt.",
        inputs=("raw_batches",),
    ),
    Table(
        name="skipped_inputs",
        model=SkippedInputs,
        group="staging",
        partitioned_by="batch",
        description="Files and folders of the batch folder that no input "
        "format reads, with the reason (batch `_raw_root`: what the raw root holds that is not a batch).",
        inputs=("raw_batches",),
        also_in_view=("raw_root.parquet",),
    ),
)
