"""pandera models of the findings tables."""

import pandera.polars as pa
import polars as pl

from cowork_assets.store.table import Table

CHECK = pl.Struct(  # one check of a re-graded run
    {
        "check_id": pl.String,
        "type": pl.String,
        "weight": pl.Float64,
        "decidable": pl.Boolean,
        "recorded": pl.Boolean,
        "met": pl.Boolean,
        "first_turn": pl.Int32,
    }
)


class StructureFindings(pa.DataFrameModel):
    """One row per structural defect of a sample: the kind that makes a chat template or a trainer fail."""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    trajectory_id: str = pa.Field(description="the sample")
    message_index: pl.Int32 = pa.Field(nullable=True, description="message concerned (null: the whole sample)")
    kind: str = pa.Field(description="unanswered_call, orphan_result, invalid_arguments_json, ... (docs/curation.md)")
    severity: str = pa.Field(isin=["error", "warning"], description="errors exclude the sample from SFT")
    detail: str = pa.Field(description="what exactly is wrong")


class TaskFindings(pa.DataFrameModel):
    """One row per inconsistency of a task package, or of one run against its package."""

    task_id: str = pa.Field(description="the task")
    task_hash: str = pa.Field(description="the task package (content hash)")
    trajectory_id: str = pa.Field(nullable=True, description="the run concerned (null: the package itself)")
    batch: str = pa.Field(nullable=True, description="that run's batch")
    check_id: str = pa.Field(nullable=True, description="the check concerned")
    kind: str = pa.Field(
        description="unexposed_tool_call, unexposed_tool_in_check, count_mismatch, ... (docs/curation.md)"
    )
    severity: str = pa.Field(isin=["error", "warning"], description="tasks with errors are excluded from RL")
    detail: str = pa.Field(description="what exactly is inconsistent")
    suggestion: str = pa.Field(nullable=True, description="the likely fix, e.g. the closest exposed tool")


class Regrade(pa.DataFrameModel):
    """One row per run: the verdict the benchmark recorded and the one replaying the task's checks gives."""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    trajectory_id: str = pa.Field(unique=True, description="the run")
    task_id: str = pa.Field(description="its task")
    category: str = pa.Field(description="task category (data source / domain)")
    recorded_passed: bool = pa.Field(nullable=True, description="the recorded verdict (null: ungraded)")
    recorded_score: float = pa.Field(nullable=True, description="the recorded score")
    regraded_passed: bool = pa.Field(
        nullable=True, description="every check replay counts (decidable, weight > 0) is met (null: none)"
    )
    regraded_score: float = pa.Field(
        nullable=True, ge=0.0, le=1.0, description="weighted share of counted checks met (= compute_score)"
    )
    grade_untrusted: str = pa.Field(
        nullable=True,
        description="why the recorded grade cannot be trusted (null: it can): ground_truth_unchanged, "
        "ground_truth_shared, passed_with_other_writes (validation/ground_truth.py)",
    )
    grade_untrusted_detail: str = pa.Field(nullable=True, description="the evidence: the state, the writes")
    checks: pl.List(CHECK) = pa.Field(
        description="per check: type, weight, whether replay can decide it, the recorded and replayed result, "
        "the assistant turn that first met it"
    )
    disagreement: str = pa.Field(
        nullable=True, description="why the verdicts differ (null: they agree; docs/training.md)"
    )
    disagreement_detail: str = pa.Field(nullable=True, description="the checks or writes concerned")


# The stage's tables, collected by the registry (store/registry.py) in pipeline order.
TABLES = (
    Table(
        name="structure_findings",
        model=StructureFindings,
        group="validation",
        partitioned_by="batch",
        description="Structural defects per sample: tool calls "
        "without a result and results without a call, arguments that are not JSON or do not fit the tool schema, "
        "message order a chat template would reject, empty assistant turns, control characters, text that does "
        "not survive a tokenizer round trip.",
        inputs=("trajectories", "task_packages", "messages", "tool_calls"),
    ),
    Table(
        name="regrade",
        model=Regrade,
        group="validation",
        partitioned_by="batch",
        description="Every run re-graded by replaying its task's checks on its "
        "transcript (cowork_assets/rewards.py): the recorded and the replayed verdict and score, per-check "
        "results, and why they differ.",
        inputs=("trajectories", "task_packages", "messages"),
    ),
    Table(
        name="task_findings",
        model=TaskFindings,
        group="validation",
        description="Inconsistent task packages across all batches: calls "
        "and checks naming tools the interface does not expose (closest one suggested), request counts that "
        "disagree with the grader, call-counting graders (re-graded from the runs), ids no state or run "
        "contains, invalid tool schemas, unknown check types.",
        inputs=("task_packages", "trajectories", "tool_calls", "regrade"),
    ),
)
