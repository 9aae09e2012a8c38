"""pandera models of the curation tables."""

import pandera.polars as pa
import polars as pl

from cowork_assets.store.models import TOOL_CALL
from cowork_assets.store.table import Table
from cowork_assets.truncation.spans import SPAN
from cowork_assets.truncation.strategies import names

VERDICTS = ["kept", "trimmed", "dropped", "unrenderable"]
CHARS_UNDER = pl.Struct({"strategy": pl.String, "chars": pl.Int64})


class CuratedMessages(pa.DataFrameModel):
    """One row per message after truncation and the budget: what a trainer would see."""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    trajectory_id: str = pa.Field(description="trajectory the message belongs to")
    message_index: pl.Int32 = pa.Field(ge=0, description="0-based position in the conversation")
    role: str = pa.Field(description="system / user / assistant / tool")
    content: str = pa.Field(nullable=True, description="curated text, with a marker in every cut")
    reasoning_content: str = pa.Field(nullable=True, description="the assistant's reasoning, as logged (never cut)")
    tool_calls: pl.List(TOOL_CALL) = pa.Field(description="assistant calls, unchanged")
    tool_call_id: str = pa.Field(nullable=True, description="for tool messages: the call answered")
    name: str = pa.Field(nullable=True, description="for tool messages: the tool name")
    original_chars: pl.Int64 = pa.Field(ge=0, description="content length before curation")
    kept_chars: pl.Int64 = pa.Field(ge=0, description="characters of the original content kept")
    kept_spans: pl.List(SPAN) = pa.Field(description="kept [start, end) ranges of the original content")
    truncated: bool = pa.Field(description="cut by observation truncation")
    trimmed: bool = pa.Field(description="cut further by the budget's trim policy")
    overflow_chars: pl.Int64 = pa.Field(ge=0, description="kept beyond the allowance because evidence needed it")
    chars: pl.Int64 = pa.Field(ge=0, description="curated content (with markers) plus tool-call text")
    terminal_chars: pl.Int64 = pa.Field(
        ge=0,
        description="terminal control text removed or replaced in a tool observation (ANSI escapes, "
        "carriage-return overwrites, other control characters)",
    )


class SampleStats(pa.DataFrameModel):
    """One row per trajectory: size before and after curation, and the budget's verdict."""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    trajectory_id: str = pa.Field(unique=True, description="the sample")
    task_id: str = pa.Field(description="its task")
    category: str = pa.Field(description="task category")
    teacher_role: str = pa.Field(description="teacher or student")
    grade_passed: bool = pa.Field(nullable=True, description="recorded grader verdict")
    chars_before: pl.Int64 = pa.Field(ge=0, description="characters before curation")
    chars_under: pl.List(CHARS_UNDER) = pa.Field(
        description="per truncation strategy (truncation/strategies/): "
        "characters after truncation under it, at the configured allowance"
    )
    chars_after: pl.Int64 = pa.Field(ge=0, description="characters after truncation and budget")
    tokens_after: pl.Int64 = pa.Field(
        ge=0, nullable=True, description="tokens after truncation and budget (counted only when a token budget is set)"
    )
    truncated_messages: pl.Int32 = pa.Field(ge=0, description="observations cut by truncation")
    trimmed_messages: pl.Int32 = pa.Field(ge=0, description="observations cut further by trim")
    overflow_chars: pl.Int64 = pa.Field(ge=0, description="characters kept beyond the allowance for evidence")
    verdict: str = pa.Field(
        isin=VERDICTS,
        description="kept / trimmed / dropped (over budget) / unrenderable (the `tokenizer`'s chat template "
        "cannot render it)",
    )
    reason: str = pa.Field(nullable=True, description="why trimmed, dropped or unrenderable")


class EvidenceAudit(pa.DataFrameModel):
    """One row per evidence item: the strategies it is lost under, and was it lost to truncation or the budget?"""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    trajectory_id: str = pa.Field(description="trajectory the item belongs to")
    check_id: str = pa.Field(description="check that depends on it, or 'grounding'")
    check_type: str = pa.Field(description="type of that check")
    source: str = pa.Field(description="explicit / derived / grounding / edit")
    value: str = pa.Field(description="the value")
    status: str = pa.Field(description="given / at_risk / produced / unused")
    found_at: pl.Int32 = pa.Field(nullable=True, description="message where it was first seen")
    found_offset: pl.Int64 = pa.Field(nullable=True, description="character offset there")
    found_message_chars: pl.Int64 = pa.Field(nullable=True, description="length of that message")
    used_at: pl.Int32 = pa.Field(nullable=True, description="message where the agent first uses it")
    lost_under: pl.List(pl.String) = pa.Field(
        description="the truncation strategies under which no message before "
        "its use shows it, at the configured allowance"
    )
    lost_to_truncation: bool = pa.Field(description="lost under the configured strategy")
    lost_to_budget: bool = pa.Field(description="sample dropped by the budget, or the value trimmed away")


class EvidenceRollup(pa.DataFrameModel):
    """One row per trajectory: its evidence items and how many were lost, and where."""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    trajectory_id: str = pa.Field(unique=True, description="the sample")
    task_id: str = pa.Field(description="its task")
    category: str = pa.Field(description="task category")
    passing_teacher: bool = pa.Field(description="a teacher demonstration whose recorded grade passed")
    items: pl.Int32 = pa.Field(ge=0, description="evidence items")
    at_risk: pl.Int32 = pa.Field(ge=0, description="items first seen in a tool observation")
    lost_to_truncation: pl.Int32 = pa.Field(ge=0, description="items lost under the configured strategy")
    lost_to_budget: pl.Int32 = pa.Field(ge=0, description="items lost to the budget")
    redacted_evidence: pl.Int32 = pa.Field(ge=0, description="items a redacted secret was part of")
    verdict: str = pa.Field(description="the budget's verdict for the sample")


class Redactions(pa.DataFrameModel):
    """One row per curated message, field and kind of secret replaced by a placeholder: where, never what."""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    trajectory_id: str = pa.Field(description="the sample")
    message_index: pl.Int32 = pa.Field(ge=0, description="the message")
    field: str = pa.Field(isin=["content", "reasoning_content", "arguments"], description="the text it was in")
    kind: str = pa.Field(description="the kind of secret, as its placeholder names it: <REDACTED:kind>")
    secret_hash: str = pa.Field(str_length=16, description="sha256 prefix of the secret (the secret is not kept)")
    occurrences: pl.Int32 = pa.Field(ge=1, description="occurrences replaced in that text")


class TruncationSweep(pa.DataFrameModel):
    """Per category, truncation strategy and allowance: at-risk evidence lost and observation characters kept."""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    category: str = pa.Field(description="task category (data source / domain)")
    strategy: str = pa.Field(isin=list(names()), description="truncation strategy (truncation/strategies/)")
    max_observation_chars: pl.Int64 = pa.Field(ge=1, description="the allowance")
    at_risk_items: pl.Int64 = pa.Field(ge=0, description="at-risk evidence items")
    lost_items: pl.Int64 = pa.Field(ge=0, description="of those, lost under this cut")
    kept_chars: pl.Int64 = pa.Field(ge=0, description="tool observation characters kept")
    observation_chars: pl.Int64 = pa.Field(ge=0, description="tool observation characters before the cut")


_RUN_TABLES = ("messages", "trajectories", "evidence")

# The stage's tables, collected by the registry (store/registry.py) in pipeline order.
TABLES = (
    Table(
        name="curated_messages",
        model=CuratedMessages,
        group="curation",
        partitioned_by="batch",
        description="Every message after observation truncation and "
        "the sample budget, with its original and kept length and the kept spans: what a trainer would see.",
        inputs=_RUN_TABLES,
    ),
    Table(
        name="sample_stats",
        model=SampleStats,
        group="curation",
        partitioned_by="batch",
        description="Per trajectory: characters and tokens before and after curation, characters under each truncation "
        "strategy, and the budget's verdict (kept / trimmed / dropped, or unrenderable by the `tokenizer`'s chat "
        "template) and reason.",
        inputs=_RUN_TABLES,
    ),
    Table(
        name="evidence_audit",
        model=EvidenceAudit,
        group="curation",
        partitioned_by="batch",
        description="Per evidence item: lost to truncation (under head, "
        "under evidence_aware, under the configured strategy) and lost to the budget.",
        inputs=_RUN_TABLES,
    ),
    Table(
        name="evidence_rollup",
        model=EvidenceRollup,
        group="curation",
        partitioned_by="batch",
        description="Per trajectory: evidence items, at-risk items, and how many were lost to truncation and to the "
        "budget, or were part of a redacted secret.",
        inputs=_RUN_TABLES,
    ),
    Table(
        name="redactions",
        model=Redactions,
        group="curation",
        partitioned_by="batch",
        description="Secrets replaced by typed placeholders (<REDACTED:kind>) in the curated messages: one row per "
        "message, field and kind, with a hash of the secret, never its text.",
        inputs=_RUN_TABLES,
    ),
    Table(
        name="truncation_sweep",
        model=TruncationSweep,
        group="curation",
        partitioned_by="batch",
        description="At-risk evidence lost per truncation strategy "
        "(head, tail, middle: verl's rollout-time sides; and evidence_aware) at allowances from 250 to 16,000 "
        "characters, per category: which allowance and side keep the evidence the graders depend on.",
        inputs=_RUN_TABLES,
    ),
)
