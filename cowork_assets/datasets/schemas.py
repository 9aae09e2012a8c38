"""The published datasets, each described once beside its rows' pandera model: what its tables, its candidate
asset, its publication, gate, card and the run summary read of it, so none of them branches on a dataset's name.
The gates also run a Great Expectations suite each (expectations/<dataset>.json)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pandera.polars as pa
import polars as pl

from cowork_assets.datasets.rl import CHECK
from cowork_assets.datasets.sft import MESSAGE
from cowork_assets.store.table import Table

SPLITS = ("train", "validation")


class SftDataset(pa.DataFrameModel):
    """One row per SFT sample: `messages` + `tools`, metadata, and lineage to the raw line."""

    sample_id: str = pa.Field(unique=True, description="stable id of the sample (its trajectory id)")
    messages: pl.List(MESSAGE) = pa.Field(
        description="role, content, tool_calls (id, type, function{name, arguments}), tool_call_id, name"
    )
    tools: str = pa.Field(description="JSON list of OpenAI function schemas")
    task_id: str = pa.Field(description="task (splits are by task)")
    category: str = pa.Field(description="task category")
    teacher: str = pa.Field(description="teacher model")
    score: float = pa.Field(nullable=True, description="recorded grader score")
    chars: pl.Int64 = pa.Field(ge=0, description="characters of the curated sample")
    tokens: pl.Int64 = pa.Field(
        ge=0,
        description="tokens of the published sample: tiktoken's over its texts, or (setting `tokenizer`) its rendering "
        "by that tokenizer's chat template",
    )
    curation: str = pa.Field(description="what truncation and trim did")
    split: str = pa.Field(isin=list(SPLITS), description="train or validation")
    batch: str = pa.Field(description="lineage: raw batch")
    raw_file: str = pa.Field(description="lineage: raw file")
    raw_record: pl.Int64 = pa.Field(ge=1, description="lineage: 1-based line (or list position)")
    trajectory_id: str = pa.Field(description="lineage: trajectory id")


class RlTasks(pa.DataFrameModel):
    """verl-style RL rows: one per validated task package."""

    data_source: str = pa.Field(description="dataset name for verl's reward routing")
    agent_name: str = pa.Field(description="verl agent loop that runs the task: tool_agent")
    prompt: pl.List(pl.Struct({"role": pl.String, "content": pl.String})) = pa.Field(
        description="system + user request"
    )
    ability: str = pa.Field(description="task category")
    reward_model: pl.Struct({"style": pl.String, "ground_truth": pl.String}) = pa.Field(
        description="style 'rule'; ground_truth: the checks (JSON list)"
    )
    extra_info: pl.Struct(
        {
            "split": pl.String,
            "index": pl.Int64,
            "task_id": pl.String,
            "need_tools_kwargs": pl.Boolean,
            "tools_kwargs": pl.String,
            "tool_selection": pl.List(pl.String),
            "tools_simulated": pl.Boolean,
            "interaction_kwargs": pl.Struct({"name": pl.String, "task_id": pl.String, "query": pl.String}),
            "teacher_pass_rate": pl.Float64,
            "difficulty": pl.Float64,
        }
    ) = pa.Field(
        description="split, index, task_id, tools_kwargs (JSON object: per tool create_kwargs), tool_selection "
        "(the task's tools), tools_simulated (the project's workspace simulation answers them), interaction_kwargs, "
        "teacher pass rate and difficulty"
    )


class RlRollouts(pa.DataFrameModel):
    """One row per rollout: raw score, per-check rewards, group-normalised advantages."""

    trajectory_id: str = pa.Field(unique=True, description="the rollout")
    task_id: str = pa.Field(description="its task")
    group_id: str = pa.Field(description="group for group-relative normalisation")
    batch: str = pa.Field(description="lineage: raw batch")
    score: float = pa.Field(ge=0, le=1, description="recorded grader score")
    checks: pl.List(CHECK) = pa.Field(description="per check: weight, reward, normalised reward, first turn satisfied")
    group_size: pl.Int64 = pa.Field(ge=1, description="rollouts in the group")
    group_mean: float = pa.Field(description="mean score of the group")
    group_std: float = pa.Field(ge=0, description="sample std of the group's scores")
    zero_variance: bool = pa.Field(description="all rollouts of the group scored the same: no learning signal")
    grpo_advantage: float = pa.Field(description="(score - mean) / (std + eps); 0 for zero-variance groups")
    gdpo_advantage: float = pa.Field(description="sum of weighted per-check group-normalised rewards")


class PreferencePairs(pa.DataFrameModel):
    """One row per preference pair: two runs of one task and prompt, the chosen graded above the rejected, in TRL's
    conversational preference format, with the lineage of both runs."""

    pair_id: str = pa.Field(unique=True, description="`<chosen trajectory>><rejected trajectory>`")
    prompt: pl.List(MESSAGE) = pa.Field(
        description="the messages both runs share from the start (system, request, ...)"
    )
    chosen: pl.List(MESSAGE) = pa.Field(description="the passing run's messages after the prompt")
    rejected: pl.List(MESSAGE) = pa.Field(description="the failing run's messages after the prompt")
    tools: str = pa.Field(description="JSON list of OpenAI function schemas (the chosen run's)")
    task_id: str = pa.Field(description="the task both runs attempt (splits are by task)")
    category: str = pa.Field(description="task category")
    margin: float = pa.Field(ge=0, le=1, description="chosen score minus rejected score")
    chosen_score: float = pa.Field(nullable=True, description="the chosen run's recorded score")
    rejected_score: float = pa.Field(nullable=True, description="the rejected run's recorded score")
    rejected_reason: str = pa.Field(description="why the rejected run failed: the checks its grade names")
    chars: pl.Int64 = pa.Field(ge=0, description="characters of both runs as published")
    split: str = pa.Field(isin=list(SPLITS), description="train or validation")
    chosen_batch: str = pa.Field(description="lineage: the chosen run's batch")
    chosen_trajectory_id: str = pa.Field(description="lineage: the chosen run")
    chosen_raw_file: str = pa.Field(description="lineage: the chosen run's raw file")
    chosen_raw_record: pl.Int64 = pa.Field(ge=1, description="lineage: the chosen run's raw line")
    rejected_batch: str = pa.Field(description="lineage: the rejected run's batch")
    rejected_trajectory_id: str = pa.Field(description="lineage: the rejected run")
    rejected_raw_file: str = pa.Field(description="lineage: the rejected run's raw file")
    rejected_raw_record: pl.Int64 = pa.Field(ge=1, description="lineage: the rejected run's raw line")


@dataclass(frozen=True, kw_only=True)
class PublishedDataset:
    """A published dataset. Its two tables (the candidate awaiting its gate, and the published versions), its
    candidate asset (around its row-building function: `candidate_rows` in datasets/assets.py), its publish step
    and its gate are derived from this."""

    name: str
    candidate: str  # the asset that stages it
    model: type[pa.DataFrameModel]
    about: str  # what it is and what a row is, for its tables' descriptions
    inputs: tuple[str, ...]  # what the candidate is computed from
    rows: Literal["samples", "tasks", "rollouts", "pairs"]  # its gate's validation view and its card's funnel
    files: tuple[str, ...] = SPLITS  # a version's files
    # Fields published as Arrow's JSON extension type (Parquet's JSON logical type): `datasets` and DuckDB read
    # them as one object per row, so a row keeps its own tool schemas and arguments (as Arrow structs, every tool's
    # parameters would merge into one sparse struct). Inside the pipeline they are JSON strings.
    json_fields: frozenset[str] = frozenset()
    exclusions: str | None = None  # its `dataset` in the exclusions table (None: nothing is selected out of it)
    length: pl.Expr | None = None  # characters per row, for the card's histogram
    training_card: bool = False  # the card reports evidence retention, the truncation sweep, tokens and budgets
    trace_examples: bool = False  # its metadata lists sample ids, each a link to the trace job
    tool_config: bool = False  # verl's tool configuration is published beside it

    def tables(self) -> tuple[Table, Table]:
        files = self.files[0] if len(self.files) == 1 else "{" + ",".join(self.files) + "}"
        return (
            Table(
                name=self.candidate,
                model=self.model,
                group="datasets",
                description=f"{self.about} A candidate version, not yet published: it awaits its gate.",
                inputs=self.inputs,
                location="candidate",
            ),
            Table(
                name=self.name,
                model=self.model,
                group="datasets",
                description=f"{self.about} The current version: <data_root>/published/{self.name}/current/"
                f"{files}.parquet, with its card.",
                inputs=(self.candidate,),
                location="published",
            ),
        )


PUBLISHED: dict[str, PublishedDataset] = {
    d.name: d
    for d in (
        PublishedDataset(
            name="sft_dataset",
            candidate="sft_candidate",
            model=SftDataset,
            about="The SFT dataset: selected runs as messages + tools with metadata and lineage, split by task into "
            "train and validation.",
            inputs=("exclusions", "curated_messages", "sample_stats", "task_packages", "truncation_sweep"),
            rows="samples",
            json_fields=frozenset({"tools", "messages.tool_calls.function.arguments"}),
            exclusions="sft",
            length=pl.col("chars"),
            training_card=True,
            trace_examples=True,
        ),
        PublishedDataset(
            name="rl_tasks",
            candidate="rl_tasks_candidate",
            model=RlTasks,
            about="The verl-style RL task rows: one per validated, deduplicated task package; tasks with consistency "
            "errors are left out and recorded in exclusions.",
            inputs=("exclusions", "task_packages", "trajectories", "messages"),
            rows="tasks",
            json_fields=frozenset({"reward_model.ground_truth", "extra_info.tools_kwargs"}),
            exclusions="rl_tasks",
            length=pl.col("prompt").list.last().struct.field("content").str.len_chars(),
            tool_config=True,
        ),
        PublishedDataset(
            name="rl_rollouts",
            candidate="rl_rollouts_candidate",
            model=RlRollouts,
            about="The processed rollout rewards: per rollout the raw score, per-check rewards, GRPO and GDPO "
            "group-normalised advantages, zero-variance groups, and the turn each check was met (from regrade's "
            "replay); runs of held-out benchmark tasks are left out (exclusions).",
            inputs=("trajectories", "regrade", "task_packages"),
            rows="rollouts",
            files=("rollouts",),
        ),
        PublishedDataset(
            name="preference_pairs",
            candidate="preference_candidate",
            model=PreferencePairs,
            about="The preference pairs (DPO; KTO through `export --format kto`): a passing and a failing run of one "
            "task and prompt, in TRL's conversational preference format; why a run is in no pair is in exclusions.",
            inputs=("exclusions", "trajectories", "curated_messages", "task_packages"),
            rows="pairs",
            json_fields=frozenset(
                {"tools", *(f"{side}.tool_calls.function.arguments" for side in ("prompt", "chosen", "rejected"))}
            ),
            exclusions="preference",
            length=pl.col("chars"),
        ),
    )
}

# The stage's tables, collected by the registry (store/registry.py) in pipeline order: each dataset's candidate,
# then the published datasets.
_PAIRS = [d.tables() for d in PUBLISHED.values()]
TABLES = (*(candidate for candidate, _ in _PAIRS), *(published for _, published in _PAIRS))
