"""pandera models of the selection tables."""

import pandera.polars as pa
import polars as pl

from cowork_assets.store.table import Table

# The criteria that keep a trajectory out of SFT, in the order they apply (exclusions.py applies them).
CRITERIA = (
    "batch",
    "holdout",
    "role",
    "grade",
    "structure",
    "task_consistency",
    "evidence",
    "budget",
    "chat_template",
    "dedup",
    "pairing",
    "cap",
)
DATASETS = ("sft", "rl_tasks", "rl_rollouts", "preference")  # the datasets of exclusions rows


class DedupSignatures(pa.DataFrameModel):
    """One row per teacher trajectory: what deduplication needs, so it never re-reads raw text."""

    batch: str = pa.Field(description="raw batch folder (the partition)")
    trajectory_id: str = pa.Field(unique=True, description="the run")
    task_id: str = pa.Field(description="its task: duplicates are only sought within a task")
    content_hash: str = pa.Field(description="sha256 prefix of the normalised conversation")
    shingles: pl.List(pl.UInt32) = pa.Field(description="hashes of word 3-grams of assistant text and actions")
    minhash: pl.List(pl.UInt64) = pa.Field(description="64 MinHash values of the shingles")
    score: float = pa.Field(nullable=True, description="recorded grader score (to pick the best)")
    chars: pl.Int64 = pa.Field(ge=0, description="characters after curation (to pick the shortest)")


class DedupClusters(pa.DataFrameModel):
    """One row per member of a duplicate cluster; the best member is kept as its representative."""

    cluster_id: str = pa.Field(description="the cluster (its smallest trajectory id)")
    task_id: str = pa.Field(description="the task")
    trajectory_id: str = pa.Field(unique=True, description="a member")
    batch: str = pa.Field(description="that member's batch")
    kind: str = pa.Field(isin=["representative", "exact", "near"], description="how it relates to the representative")
    similarity: float = pa.Field(ge=0, le=1, description="Jaccard similarity to the representative")
    representative: str = pa.Field(description="the member kept")
    kept: bool = pa.Field(description="this member is the representative")


class Exclusions(pa.DataFrameModel):
    """One row per (trajectory, criterion, reason) that keeps a trajectory out of SFT, or a task out of RL."""

    dataset: str = pa.Field(isin=list(DATASETS), description="the dataset the row keeps it out of")
    batch: str = pa.Field(nullable=True, description="the trajectory's batch (null for RL task rows)")
    trajectory_id: str = pa.Field(nullable=True, description="the trajectory (null for RL task rows)")
    task_id: str = pa.Field(description="its task")
    criterion: str = pa.Field(
        isin=list(CRITERIA),
        description=", ".join(CRITERIA),
    )
    reason: str = pa.Field(description="short reason")
    detail: str = pa.Field(nullable=True, description="the specifics")


# The stage's tables, collected by the registry (store/registry.py) in pipeline order.
TABLES = (
    Table(
        name="dedup_signatures",
        model=DedupSignatures,
        group="selection",
        partitioned_by="batch",
        description="Per teacher run: content hash, shingle hashes and "
        "MinHash signature of the curated conversation, so cross-batch deduplication never needs the text.",
        inputs=("curated_messages", "trajectories", "sample_stats"),
    ),
    Table(
        name="dedup_clusters",
        model=DedupClusters,
        group="selection",
        partitioned_by="bucket",
        description="Duplicate clusters of teacher runs within each "
        "task, across all batches: exact (same normalised content) and near (MinHash LSH candidates verified by "
        "exact Jaccard >= near_dup_threshold). The best member (highest score, then fewest characters) is kept.",
        inputs=("dedup_signatures",),
    ),
    Table(
        name="exclusions",
        model=Exclusions,
        group="selection",
        partitioned_by="bucket",
        description="Why each trajectory is not in the SFT set: one row per (trajectory, criterion, reason) — "
        "holdout, role, grade, structure, task_consistency, evidence, budget, chat_template, dedup, then the per-task "
        "cap; why a run is in no preference pair (`dataset` = preference: a guard, its grade, pairing, cap); why a "
        "task is not in the RL tasks, and which rollouts are held out. Query it with "
        "`cowork-curate sql --query why_excluded --param trajectory_id=...`.",
        inputs=(
            "trajectories",
            "structure_findings",
            "task_findings",
            "evidence_rollup",
            "sample_stats",
            "dedup_clusters",
            "task_packages",
            "messages",
            "regrade",
        ),
    ),
)
