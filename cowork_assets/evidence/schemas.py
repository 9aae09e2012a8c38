"""pandera model of the evidence table."""

import pandera.polars as pa
import polars as pl

from cowork_assets.store.table import Table

STATUSES = ["given", "at_risk", "produced", "unused"]
SHOWN = pl.Struct({"message_index": pl.Int32, "offset": pl.Int64, "length": pl.Int64})


class Evidence(pa.DataFrameModel):
    """One row per evidence item: a value a grading check (or grounding) depends on, and where it was seen."""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    trajectory_id: str = pa.Field(description="trajectory the item belongs to")
    check_id: str = pa.Field(description="check that depends on the value, or 'grounding'")
    check_type: str = pa.Field(description="type of that check (or 'grounding')")
    source: str = pa.Field(
        isin=["explicit", "derived", "grounding", "edit"],
        description="how the item was found (edit: the text a code edit searches for)",
    )
    value: str = pa.Field(description="the value as the check (or the call) states it")
    norm: str = pa.Field(description="normalised value used for matching")
    used_at: pl.Int32 = pa.Field(nullable=True, description="assistant message that first uses it (null: never used)")
    found_at: pl.Int32 = pa.Field(nullable=True, description="first earlier message that shows it (null: none)")
    found_role: str = pa.Field(nullable=True, description="role of that message")
    found_offset: pl.Int64 = pa.Field(nullable=True, ge=0, description="character offset in that message")
    found_length: pl.Int64 = pa.Field(nullable=True, ge=1, description="characters of the match there")
    found_message_chars: pl.Int64 = pa.Field(nullable=True, ge=0, description="length of that message")
    status: str = pa.Field(isin=STATUSES, description="given / at_risk / produced / unused (docs/curation.md)")
    shown_at: pl.List(SHOWN) = pa.Field(
        description="every match before first use: message_index, offset, length "
        "(curation checks which of them truncation keeps)"
    )


# The stage's tables, collected by the registry (store/registry.py) in pipeline order.
TABLES = (
    Table(
        name="evidence",
        model=Evidence,
        group="evidence",
        partitioned_by="batch",
        description="One row per evidence item: the values each trajectory's grader "
        "depends on (explicit, derived from checks, or grounding ids in tool-call arguments), where the agent "
        "first uses each, and where it was first seen: given (system/user), at_risk (a tool observation, with "
        "offset), produced, or unused.",
        inputs=("trajectories", "messages", "tool_calls", "task_packages"),
    ),
)
