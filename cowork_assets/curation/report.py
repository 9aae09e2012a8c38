"""What the curation checks report: counts, rates and examples, as plain values and markdown."""

from __future__ import annotations

import polars as pl

from cowork_assets.markdown import EXAMPLES, table
from cowork_assets.settings import CurationSettings
from cowork_assets.truncation.strategies import names


def _spans(spans) -> str:
    return ", ".join(f"{s['start']}–{s['end']}" for s in spans or []) or "nothing"


def truncation_report(
    audit: pl.DataFrame,
    rollup: pl.DataFrame,
    curated: pl.DataFrame,
    max_truncation_loss_rate: float,
    settings: CurationSettings,
) -> tuple[bool, dict]:
    """Lost at-risk evidence of passing teacher trajectories under the configured strategy."""
    population = audit.join(rollup.select("trajectory_id", "passing_teacher"), on="trajectory_id").filter(
        pl.col("status") == "at_risk", pl.col("passing_teacher")
    )
    lost = population.filter(pl.col("lost_to_truncation"))
    rate = lost.height / population.height if population.height else 0.0
    examples = lost.head(EXAMPLES).join(
        curated.select("trajectory_id", pl.col("message_index").alias("found_at"), "kept_spans"),
        on=["trajectory_id", "found_at"],
        how="left",
        maintain_order="left",
    )
    return rate <= max_truncation_loss_rate, {
        "truncation_strategy": settings.truncation_strategy,
        "max_observation_chars": settings.max_observation_chars,
        "at_risk_items": population.height,
        "lost_items": lost.height,
        "loss_rate": round(rate, 4),
        "threshold": max_truncation_loss_rate,
        "trajectories_affected": lost["trajectory_id"].n_unique(),
        "examples": table(
            ["trajectory", "check", "value", "where it sat", "what remained of that message"],
            [
                (
                    r["trajectory_id"],
                    r["check_id"],
                    r["value"],
                    f"message {r['found_at']}, char {r['found_offset']} of {r['found_message_chars']}",
                    f"kept {_spans(r['kept_spans'])}",
                )
                for r in examples.iter_rows(named=True)
            ],
            lost.height,
        ),
    }


def budget_report(stats: pl.DataFrame, audit: pl.DataFrame, min_category_retention: float) -> tuple[bool, dict]:
    """Passing teacher samples the budget removes, per category, task and check type."""
    passing = stats.filter(pl.col("teacher_role") == "teacher", pl.col("grade_passed").fill_null(False))
    removed = pl.col("verdict") == "dropped"
    by_category = (
        passing.group_by("category")
        .agg(passing=pl.len(), removed=removed.sum(), trimmed=(pl.col("verdict") == "trimmed").sum())
        .with_columns(retention=1 - pl.col("removed") / pl.col("passing"))
        .sort("category")
    )
    by_task = (
        passing.group_by("category", "task_id")
        .agg(passing=pl.len(), removed=removed.sum())
        .filter(pl.col("removed") > 0)
        .sort("category", "task_id")
    )
    emptied = by_task.filter(pl.col("removed") == pl.col("passing"))
    dropped_ids = passing.filter(removed).select("trajectory_id")
    by_check = (
        audit.select("trajectory_id", "check_type")
        .unique()
        .join(dropped_ids, on="trajectory_id")
        .group_by("check_type")
        .agg(removed=pl.len())
        .sort("check_type")
    )
    low = by_category.filter(pl.col("retention") < min_category_retention)
    return low.is_empty() and emptied.is_empty(), {
        "passing_samples": passing.height,
        "removed": passing.filter(removed).height,
        "trimmed": passing.filter(pl.col("verdict") == "trimmed").height,
        "min_category_retention": min_category_retention,
        "categories_below_retention": low.height,
        "tasks_losing_all": emptied.height,
        "by_category": table(
            ["category", "passing", "removed", "trimmed", "retention"],
            [(c, p, r, t, f"{k:.1%}") for c, p, r, t, k in by_category.iter_rows()],
        ),
        "by_task": table(["category", "task", "passing", "removed"], by_task.head(EXAMPLES).rows(), by_task.height),
        "by_check_type": table(["check type", "passing samples removed"], by_check.rows()),
        "examples": table(
            ["trajectory", "chars before", "chars after", "reason"],
            passing.filter(removed)
            .head(EXAMPLES)
            .select("trajectory_id", "chars_before", "chars_after", "reason")
            .rows(),
            passing.filter(removed).height,
        ),
    }


def strategy_report(audit: pl.DataFrame, rollup: pl.DataFrame, stats: pl.DataFrame, settings: CurationSettings) -> dict:
    """Items and trajectories lost under each strategy, and the characters each keeps."""
    passing = rollup.filter(pl.col("passing_teacher")).select("trajectory_id")
    rows, out = (
        [],
        {"configured": settings.truncation_strategy, "max_observation_chars": settings.max_observation_chars},
    )
    chars = dict(
        stats.select(pl.col("chars_under").explode().struct.unnest())
        .group_by("strategy")
        .agg(pl.col("chars").sum())
        .iter_rows()
    )
    for strategy in names():
        lost = audit.filter(pl.col("lost_under").list.contains(strategy))
        values = {
            "items_lost": lost.height,
            "items_lost_passing_teachers": lost.join(passing, on="trajectory_id").height,
            "trajectories_losing_evidence": lost["trajectory_id"].n_unique(),
            "chars_after_truncation": int(chars.get(strategy, 0)),
        }
        out |= {f"{strategy}_{k}": v for k, v in values.items()}
        rows.append((strategy, *values.values()))
    out["comparison"] = table(
        ["strategy", "items lost", "of passing teachers", "trajectories losing evidence", "chars after truncation"],
        rows,
    )
    return out
