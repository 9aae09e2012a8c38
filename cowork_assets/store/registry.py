"""The table registry: every table and dataset the pipeline writes, once.

For each: its name, pandera model, stage (the Dagster group), whether it is partitioned by batch, where it
lives, its description and its inputs (the assets it is computed from). Asset specs and dependencies, the
warehouse's table views, the schema checks and the schema tests are all derived from this list; adding a
table is one entry here plus the function that computes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pandera.polars as pa

from cowork_assets.curation.schemas import CuratedMessages, EvidenceAudit, EvidenceRollup, SampleStats, TruncationSweep
from cowork_assets.datasets.schemas import RlRollouts, RlTasks, SftDataset
from cowork_assets.evidence.schemas import Evidence
from cowork_assets.ingest.schemas import Messages, Quarantine, SkippedInputs, TaskPackages, ToolCalls, Trajectories
from cowork_assets.selection.schemas import DedupClusters, DedupSignatures, Exclusions
from cowork_assets.validation.schemas import Regrade, StructureFindings, TaskFindings

# tables: <data_root>/tables/<name>/ (batch=<b>/data.parquet per batch, else data.parquet);
# staged: a candidate dataset version awaiting its gate; published: <data_root>/published/<name>/current/.
Location = Literal["tables", "staged", "published"]


@dataclass(frozen=True)
class Table:
    name: str
    model: type[pa.DataFrameModel]
    stage: str
    per_batch: bool
    description: str
    inputs: tuple[str, ...]
    location: Location = "tables"
    also_in_view: tuple[str, ...] = ()  # more files of the table's folder its warehouse view reads

    def view_sql(self) -> str:
        """The warehouse's view of this table, over all batches (`{tables}` and `{current:NAME}`, the current
        version's folder, are filled in when the DuckDB file is built)."""
        if self.location == "published":
            files = [f"{{current:{self.name}}}/*.parquet"]
        else:
            files = [f"{{tables}}/{self.name}/" + ("batch=*/data.parquet" if self.per_batch else "data.parquet")]
            files += [f"{{tables}}/{self.name}/{f}" for f in self.also_in_view]
        listed = ", ".join(f"'{f}'" for f in files)
        return f"CREATE OR REPLACE VIEW {self.name} AS SELECT * FROM read_parquet([{listed}], union_by_name = true)"


_RUN_TABLES = ("messages", "trajectories", "evidence")
_CURATION = "Computed together from the batch's messages, runs and evidence. "

REGISTRY: tuple[Table, ...] = (
    Table(
        "trajectories",
        Trajectories,
        "staging",
        True,
        "One row per parsed trajectory: task, teacher, grade, "
        "counts, characters, and lineage (raw_file, raw_record = 1-based line).",
        ("raw_batches",),
    ),
    Table(
        "messages",
        Messages,
        "staging",
        True,
        "One row per message, tool calls normalised (arguments as JSON "
        "strings), with character counts (tokens are counted once, for the published samples).",
        ("raw_batches",),
    ),
    Table(
        "tool_calls",
        ToolCalls,
        "staging",
        True,
        "One row per tool call with the observation that answered it and its length.",
        ("raw_batches",),
    ),
    Table(
        "task_packages",
        TaskPackages,
        "staging",
        True,
        "One row per distinct task package (request, initial state, tools, checks) in the batch.",
        ("raw_batches",),
    ),
    Table(
        "quarantine",
        Quarantine,
        "staging",
        True,
        "Raw records that could not be parsed: file, 1-based record, reason, detail, excerpt.",
        ("raw_batches",),
    ),
    Table(
        "skipped_inputs",
        SkippedInputs,
        "staging",
        True,
        "Files and folders of the batch folder that no input "
        "format reads, with the reason (batch `_raw_root`: what the raw root holds that is not a batch).",
        ("raw_batches",),
        also_in_view=("raw_root.parquet",),
    ),
    Table(
        "evidence",
        Evidence,
        "evidence",
        True,
        "One row per evidence item: the values each trajectory's grader "
        "depends on (explicit, derived from checks, or grounding ids in tool-call arguments), where the agent "
        "first uses each, and where it was first seen: given (system/user), at_risk (a tool observation, with "
        "offset), produced, or unused.",
        ("trajectories", "messages", "tool_calls", "task_packages"),
    ),
    Table(
        "curated_messages",
        CuratedMessages,
        "curation",
        True,
        "Every message after observation truncation and "
        "the sample budget, with its original and kept length and the kept spans: what a trainer would see.",
        _RUN_TABLES,
    ),
    Table(
        "sample_stats",
        SampleStats,
        "curation",
        True,
        "Per trajectory: characters and tokens before and after "
        "curation, characters under each truncation strategy, and the budget's verdict (kept / trimmed / dropped) "
        "and reason.",
        _RUN_TABLES,
    ),
    Table(
        "evidence_audit",
        EvidenceAudit,
        "curation",
        True,
        "Per evidence item: lost to truncation (under head, "
        "under evidence_aware, under the configured strategy) and lost to the budget.",
        _RUN_TABLES,
    ),
    Table(
        "evidence_rollup",
        EvidenceRollup,
        "curation",
        True,
        "Per trajectory: evidence items, at-risk items, and how many were lost to truncation and to the budget.",
        _RUN_TABLES,
    ),
    Table(
        "truncation_sweep",
        TruncationSweep,
        "curation",
        True,
        "At-risk evidence lost per truncation strategy "
        "(head, tail, middle: verl's rollout-time sides; and evidence_aware) at allowances from 250 to 16,000 "
        "characters, per category: which allowance and side keep the evidence the graders depend on.",
        _RUN_TABLES,
    ),
    Table(
        "structure_findings",
        StructureFindings,
        "validation",
        True,
        "Structural defects per sample: tool calls "
        "without a result and results without a call, arguments that are not JSON or do not fit the tool schema, "
        "message order a chat template would reject, empty assistant turns, control characters, text that does "
        "not survive a tokenizer round trip.",
        ("trajectories", "task_packages", "messages", "tool_calls"),
    ),
    Table(
        "regrade",
        Regrade,
        "validation",
        True,
        "Every run re-graded by replaying its task's checks on its "
        "transcript (cowork_assets/rewards.py): the recorded and the replayed verdict and score, per-check "
        "results, and why they differ.",
        ("trajectories", "task_packages", "messages"),
    ),
    Table(
        "task_findings",
        TaskFindings,
        "validation",
        False,
        "Inconsistent task packages across all batches: calls "
        "and checks naming tools the interface does not expose (closest one suggested), request counts that "
        "disagree with the grader, call-counting graders (re-graded from the runs), ids no state or run "
        "contains, invalid tool schemas, unknown check types.",
        ("task_packages", "trajectories", "tool_calls", "regrade"),
    ),
    Table(
        "dedup_signatures",
        DedupSignatures,
        "selection",
        True,
        "Per teacher run: content hash, shingle hashes and "
        "MinHash signature of the curated conversation, so cross-batch deduplication never needs the text.",
        ("curated_messages", "trajectories", "sample_stats"),
    ),
    Table(
        "dedup_clusters",
        DedupClusters,
        "selection",
        False,
        "Duplicate clusters of teacher runs within each "
        "task, across all batches: exact (same normalised content) and near (MinHash LSH candidates verified by "
        "exact Jaccard >= near_dup_threshold). The best member (highest score, then fewest characters) is kept.",
        ("dedup_signatures",),
    ),
    Table(
        "exclusions",
        Exclusions,
        "selection",
        False,
        "Why each trajectory is not in the SFT set: one row per "
        "(trajectory, stage, reason) — role, grade, structure, task_consistency, evidence, budget, dedup, then "
        "the per-task cap. Query it with `cowork-curate sql --query why_excluded --param trajectory_id=...`.",
        ("trajectories", "structure_findings", "task_findings", "evidence_rollup", "sample_stats", "dedup_clusters"),
    ),
    Table(
        "sft_candidate",
        SftDataset,
        "datasets",
        False,
        "Candidate SFT dataset (staged, not yet published): "
        "selected runs as messages + tools with metadata and lineage, split by task into train and validation.",
        ("exclusions", "curated_messages", "sample_stats", "task_packages", "truncation_sweep"),
        "staged",
    ),
    Table(
        "rl_tasks_candidate",
        RlTasks,
        "datasets",
        False,
        "Candidate verl-style RL task rows (staged): one per "
        "validated, deduplicated task package; tasks with consistency errors are left out and recorded in "
        "exclusions.",
        ("exclusions", "task_packages", "trajectories", "messages"),
        "staged",
    ),
    Table(
        "rl_rollouts_candidate",
        RlRollouts,
        "datasets",
        False,
        "Candidate processed rollout rewards (staged): per "
        "rollout the raw score, per-check rewards, GRPO and GDPO group-normalised advantages, zero-variance "
        "groups, and the turn each check was met (from regrade's replay).",
        ("trajectories", "regrade"),
        "staged",
    ),
    Table(
        "sft_dataset",
        SftDataset,
        "datasets",
        False,
        "The published SFT dataset: the current version under "
        "<data_root>/published/sft_dataset/current/{train,validation}.parquet, with its card.",
        ("sft_candidate",),
        "published",
    ),
    Table(
        "rl_tasks",
        RlTasks,
        "datasets",
        False,
        "The published verl-style RL task dataset: "
        "<data_root>/published/rl_tasks/current/{train,validation}.parquet, with its card.",
        ("rl_tasks_candidate",),
        "published",
    ),
    Table(
        "rl_rollouts",
        RlRollouts,
        "datasets",
        False,
        "The published rollout rewards: <data_root>/published/rl_rollouts/current/rollouts.parquet, with its card.",
        ("rl_rollouts_candidate",),
        "published",
    ),
)

TABLES: dict[str, Table] = {t.name: t for t in REGISTRY}


def stage(name: str) -> dict[str, Table]:
    """The tables of one stage, in registry order."""
    return {t.name: t for t in REGISTRY if t.stage == name}


def in_warehouse() -> list[Table]:
    """The tables and published datasets the DuckDB file has a view of (candidates are not queryable)."""
    return [t for t in REGISTRY if t.location != "staged"]


def published() -> dict[str, Table]:
    """The published datasets, in registry order."""
    return {t.name: t for t in REGISTRY if t.location == "published"}
