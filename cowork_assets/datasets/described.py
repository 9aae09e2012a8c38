"""Each published dataset described once, as data: what its publication, gate, card and the run summary read of it,
so none of them branches on a dataset's name. A new dataset is a description here, its table in the registry, its
candidate asset and its suite in expectations/."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import polars as pl


@dataclass(frozen=True, kw_only=True)
class PublishedDataset:
    name: str
    candidate: str  # the asset that stages it
    rows: Literal[
        "samples", "tasks", "rollouts", "pairs"
    ]  # what a row is: its gate's validation view and its card's funnel
    exclusions: str | None = None  # its `dataset` in the exclusions table (None: nothing is selected out of it)
    length: pl.Expr | None = None  # characters per row, for the card's histogram
    training_card: bool = False  # the card reports evidence retention, the truncation sweep, tokens and budgets
    trace_examples: bool = False  # its metadata lists sample ids, each a link to the trace job
    tool_config: bool = False  # verl's tool configuration is published beside it


PUBLISHED: dict[str, PublishedDataset] = {
    d.name: d
    for d in (
        PublishedDataset(
            name="sft_dataset",
            candidate="sft_candidate",
            rows="samples",
            exclusions="sft",
            length=pl.col("chars"),
            training_card=True,
            trace_examples=True,
        ),
        PublishedDataset(
            name="rl_tasks",
            candidate="rl_tasks_candidate",
            rows="tasks",
            exclusions="rl_tasks",
            length=pl.col("prompt").list.last().struct.field("content").str.len_chars(),
            tool_config=True,
        ),
        PublishedDataset(name="rl_rollouts", candidate="rl_rollouts_candidate", rows="rollouts"),
        PublishedDataset(
            name="preference_pairs",
            candidate="preference_candidate",
            rows="pairs",
            exclusions="preference",
            length=pl.col("chars"),
        ),
    )
}
