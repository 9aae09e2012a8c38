"""Column lineage: which upstream columns each column of the curated and published tables comes from.

Dagster shows it on an asset's page (Overview -> Column lineage) from the `dagster/column_lineage`
metadata of each materialization. One declaration per table, kept honest by a test that every
column named here exists in the table and in its upstream table.
"""

from __future__ import annotations

import dagster as dg

_RUN = {"batch": [("trajectories", "batch")], "trajectory_id": [("trajectories", "trajectory_id")]}
_MESSAGE = [("curated_messages", c) for c in ("role", "content", "tool_calls", "tool_call_id", "name")]

_SFT = {
    "sample_id": [("trajectories", "trajectory_id")],
    "messages": _MESSAGE,
    "tools": [("task_packages", "tools")],
    "task_id": [("trajectories", "task_id")],
    "category": [("trajectories", "category")],
    "teacher": [("trajectories", "teacher_model")],
    "score": [("trajectories", "grade_score")],
    "chars": [("sample_stats", "chars_after")],
    "tokens": _MESSAGE,
    "curation": [("sample_stats", c) for c in ("truncated_messages", "trimmed_messages", "overflow_chars")],
    "split": [("trajectories", "task_id")],
    "raw_file": [("trajectories", "raw_file")],
    "raw_record": [("trajectories", "raw_record")],
    **_RUN,
}
_RL_TASKS = {
    "prompt": [("messages", "content"), ("task_packages", "request")],
    "ability": [("task_packages", "category")],
    "reward_model": [("task_packages", "checks")],
    "extra_info": [("task_packages", c) for c in ("task_id", "request", "tools", "initial_state")]
    + [("trajectories", "grade_passed")],
}
_RL_ROLLOUTS = {
    "trajectory_id": [("trajectories", "trajectory_id")],
    "task_id": [("trajectories", "task_id")],
    "group_id": [("trajectories", "group_id")],
    "batch": [("trajectories", "batch")],
    "score": [("trajectories", "grade_score")],
    "checks": [("regrade", "checks")],
    **{
        c: [("trajectories", "grade_score"), ("trajectories", "group_id")]
        for c in ("group_size", "group_mean", "group_std", "zero_variance", "grpo_advantage", "gdpo_advantage")
    },
}

COLUMN_LINEAGE: dict[str, dict[str, list[tuple[str, str]]]] = {
    "curated_messages": {
        **{c: [("messages", c)] for c in ("batch", "trajectory_id", "message_index", "role", "tool_call_id", "name")},
        "content": [("messages", "content"), ("evidence", "found_at"), ("evidence", "value")],
        "tool_calls": [("messages", "tool_calls")],
        "original_chars": [("messages", "chars")],
        "kept_spans": [("messages", "content"), ("evidence", "found_at")],
    },
    "sample_stats": {
        **_RUN,
        "task_id": [("trajectories", "task_id")],
        "category": [("trajectories", "category")],
        "teacher_role": [("trajectories", "teacher_role")],
        "grade_passed": [("trajectories", "grade_passed")],
        "chars_before": [("messages", "chars")],
    },
    "evidence_audit": {
        **{c: [("evidence", c)] for c in ("batch", "trajectory_id", "check_id", "value", "status", "found_at")},
    },
    "sft_candidate": _SFT,
    "sft_dataset": {c: [("sft_candidate", c)] for c in _SFT},
    "rl_tasks_candidate": _RL_TASKS,
    "rl_tasks": {c: [("rl_tasks_candidate", c)] for c in (*_RL_TASKS, "data_source")},
    "rl_rollouts_candidate": _RL_ROLLOUTS,
    "rl_rollouts": {c: [("rl_rollouts_candidate", c)] for c in _RL_ROLLOUTS},
}


def column_lineage(asset: str) -> dict:
    """`dagster/column_lineage` metadata for an asset's materialization (empty when none is declared)."""
    if asset not in COLUMN_LINEAGE:
        return {}
    return {
        "dagster/column_lineage": dg.TableColumnLineage(
            deps_by_column={
                column: [dg.TableColumnDep(asset_key=dg.AssetKey(a), column_name=c) for a, c in deps]
                for column, deps in COLUMN_LINEAGE[asset].items()
            }
        )
    }


def lineage_rows() -> list[tuple[str, str, str, str]]:
    """(asset, column, source asset, source column) for every declared dependency."""
    return [
        (asset, column, a, c)
        for asset, columns in COLUMN_LINEAGE.items()
        for column, deps in columns.items()
        for a, c in deps
    ]
