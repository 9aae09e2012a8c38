"""Why a trajectory is not in the SFT set (one row per trajectory, criterion and reason), and why a task is
not in the RL dataset (`dataset` = rl_tasks, one row per task and kind of consistency error).

Criteria, in the order they apply: batch (its batch was refused by an ERROR check and is held back:
`hold_back_refused_batches`), holdout, role, grade, structure, task_consistency, evidence, budget,
chat_template (the `tokenizer`'s template cannot render the sample), dedup, cap. A trajectory gets a row for
every criterion that excludes it, so "why is X not in the dataset?" has the whole answer. The per-task cap applies
last, to the trajectories no other criterion excluded. A held-out benchmark task (`selection/holdout.py`) is kept
out of every dataset: its runs out of SFT and of the RL rollouts (`dataset` = rl_rollouts), the task out of the RL
tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import polars as pl

from cowork_assets.selection.holdout import HELD_OUT_SCHEMA
from cowork_assets.selection.preference import GUARDS, pair_runs, sides
from cowork_assets.selection.schemas import CRITERIA, Exclusions
from cowork_assets.store.buckets import bucket_groups, split_by_bucket, task_buckets
from cowork_assets.store.models import polars_schema

SCHEMA = polars_schema(Exclusions)
# Warnings that keep a task out of RL (not out of SFT): nothing to reward it by, no sandbox to rebuild it in.
NOT_RL_TASKS = ("no_checks", "no_sandbox")


# A trajectory id in several batches (a file copied into two drops) counts once: the row of its first batch, in
# name order, wins; the others are excluded ("duplicate trajectory id").
FIRST_BATCH = pl.col("batch").min().over("trajectory_id")


def first_batch_rows(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """The rows of each trajectory id's first batch (`FIRST_BATCH`)."""
    return frame.filter(pl.col("batch") == FIRST_BATCH)


def _rows(frame: pl.DataFrame, criterion: str, reason: pl.Expr, detail: pl.Expr, dataset: str = "sft") -> pl.DataFrame:
    return frame.select(
        dataset=pl.lit(dataset),
        batch="batch",
        trajectory_id="trajectory_id",
        task_id="task_id",
        criterion=pl.lit(criterion),
        reason=reason,
        detail=detail,
    ).cast(SCHEMA)


def _task_rows(frame: pl.DataFrame, criterion: str, reason: pl.Expr, detail: pl.Expr) -> pl.DataFrame:
    """Rows of the RL task dataset: one per task of `frame`, no trajectory."""
    return frame.with_columns(batch=pl.lit(None, pl.String), trajectory_id=pl.lit(None, pl.String)).pipe(
        _rows, criterion, reason, detail, "rl_tasks"
    )


def held_out_rows(held: pl.DataFrame) -> pl.DataFrame:
    """The held-out tasks' rows of the RL task dataset."""
    return _task_rows(held, "holdout", pl.col("reason"), pl.col("detail"))


def secret_check_rows(tasks: pl.DataFrame) -> pl.DataFrame:
    """The RL task rows of tasks whose checks hold a redacted secret (task_id, kinds)."""
    return _task_rows(
        tasks,
        "evidence",
        pl.lit("check depends on a redacted secret"),
        pl.format("its checks compare a value redacted as {}", "kinds"),
    )


def rl_task_exclusions(task_findings: pl.DataFrame) -> pl.DataFrame:
    """Tasks left out of the RL dataset: every task with an error finding (or nothing to reward it by, or no sandbox
    to rebuild it in), once per kind."""
    errors = task_findings.filter((pl.col("severity") == "error") | pl.col("kind").is_in(NOT_RL_TASKS))
    counted = errors.group_by("task_id", "kind", maintain_order=True).agg(pl.col("detail").first(), n=pl.len())
    return _task_rows(counted, "task_consistency", pl.col("kind"), pl.format("{} (x{})", "detail", "n")).sort(
        "task_id", "reason"
    )


def find_exclusions(
    trajectories: pl.DataFrame,
    structure: pl.DataFrame,
    task_findings: pl.DataFrame,
    rollup: pl.DataFrame,
    stats: pl.DataFrame,
    clusters: pl.DataFrame,
    max_per_task: int,
    lost_evidence_policy: str,
    accept_ungraded: bool = False,
    held: pl.DataFrame | None = None,
    secret_checks: pl.DataFrame | None = None,
    refused: dict[str, str] | None = None,
    untrusted: pl.DataFrame | None = None,
    preference_margin: float = 0.5,
    preference_max_per_task: int = 4,
) -> pl.DataFrame:
    """`trajectories`: batch, trajectory_id, task_id, teacher_role, grade_passed, grade_score, and, where they are
    only some of the corpus's tasks, kept_in: the first batch of the id in the whole corpus (`FIRST_BATCH` of the
    frame otherwise); `held`: the held-out tasks (task_id, benchmark, reason, detail; `selection/holdout.py`);
    `secret_checks`: tasks whose checks hold a redacted secret (task_id, kinds; `curation/redact.py`); `refused`: the
    batches held back (batch -> the ERROR checks that refused it), whose runs are in no dataset; `untrusted`: batch,
    trajectory_id of runs whose recorded grade cannot be trusted. With `prompt_key` and `chars` in `trajectories`,
    the runs not in a preference pair get their rows too (`dataset` = preference; `selection/preference.py`)."""
    t = trajectories
    held = held if held is not None else pl.DataFrame(schema=HELD_OUT_SCHEMA)
    holdout = t.join(held.select("task_id", held_reason="reason", held_detail="detail"), on="task_id")
    reason = pl.format("held-out benchmark task ({})", "held_reason")
    run = ["batch", "trajectory_id"]  # a trajectory id may (wrongly) recur in another batch
    errors = task_findings.filter(pl.col("severity") == "error")
    task_level = t.join(
        errors.filter(pl.col("trajectory_id").is_null()).select("task_id", "kind", "detail"), on="task_id"
    )
    run_level = t.join(errors.filter(pl.col("trajectory_id").is_not_null()).select(*run, "kind", "detail"), on=run)
    structural = t.join(
        structure.filter(pl.col("severity") == "error")
        .group_by(*run, "kind")
        .agg(pl.col("detail").first(), n=pl.len()),
        on=run,
    )
    evidence = t.join(rollup.filter(pl.col("lost_to_truncation") > 0).select(*run, "lost_to_truncation"), on=run)
    secret = t.join(rollup.filter(pl.col("redacted_evidence") > 0).select(*run, "redacted_evidence"), on=run)
    dropped = t.join(stats.filter(pl.col("verdict") == "dropped").select(*run, "reason"), on=run)
    unrenderable = t.join(stats.filter(pl.col("verdict") == "unrenderable").select(*run, "reason"), on=run)
    duplicates = t.join(clusters.filter(~pl.col("kept")).select(*run, "kind", "representative", "similarity"), on=run)
    kept_in = pl.col("kept_in") if "kept_in" in t.columns else FIRST_BATCH
    repeated = t.with_columns(kept_in=kept_in).filter(pl.col("batch") != pl.col("kept_in"))
    refused = pl.DataFrame(
        list((refused or {}).items()), schema={"batch": pl.String, "checks": pl.String}, orient="row"
    )
    in_refused = t.join(refused, on="batch")
    refused_reason, refused_detail = pl.lit("batch held back"), pl.format("its run failed ERROR check(s): {}", "checks")
    lost = pl.concat(  # a sample that lost evidence: out of SFT by policy, never a side of a preference pair
        [
            _rows(
                evidence,
                "evidence",
                pl.lit("lost evidence to truncation"),
                pl.format("{} at-risk value(s) no longer shown before use", "lost_to_truncation"),
            ),
            _rows(
                secret,
                "evidence",
                pl.lit("evidence redacted as a secret"),
                pl.format(
                    "{} value(s) a check depends on are part of a secret the dataset cannot show", "redacted_evidence"
                ),
            ),
        ]
    )
    frames = [
        _rows(in_refused, "batch", refused_reason, refused_detail),
        _rows(holdout, "holdout", reason, pl.col("held_detail")),
        _rows(
            t.filter(pl.col("teacher_role") != "teacher"),
            "role",
            pl.lit("student rollout"),
            pl.lit("student rollouts are RL data, not demonstrations"),
        ),
        _rows(
            t.filter(pl.col("teacher_role") == "teacher", ~pl.col("grade_passed").fill_null(accept_ungraded)),
            "grade",
            pl.when(pl.col("grade_passed").is_null()).then(pl.lit("not graded")).otherwise(pl.lit("did not pass")),
            pl.when(pl.col("grade_passed").is_null())
            .then(pl.lit("no grade recorded (see accept_ungraded)"))
            .otherwise(pl.format("recorded score {}", "grade_score")),
        ),
        _rows(structural, "structure", pl.col("kind"), pl.format("{} (x{})", "detail", "n")),
        _rows(task_level, "task_consistency", pl.col("kind"), pl.col("detail")),
        _rows(run_level, "task_consistency", pl.col("kind"), pl.col("detail")),
        lost if lost_evidence_policy == "drop" else pl.DataFrame(schema=SCHEMA),
        _rows(dropped, "budget", pl.lit("over budget"), pl.col("reason")),
        _rows(unrenderable, "chat_template", pl.lit("the chat template cannot render it"), pl.col("reason")),
        _rows(
            duplicates,
            "dedup",
            pl.format("{} duplicate", "kind"),
            pl.format("of {} (Jaccard {})", "representative", "similarity"),
        ),
        _rows(
            repeated,
            "dedup",
            pl.lit("duplicate trajectory id"),
            pl.format("the same id is in batch {} (kept there)", "kept_in"),
        ),
    ]
    excluded = pl.concat(frames)
    eligible = t.join(excluded.select(run).unique(), on=run, how="anti").join(
        stats.select(*run, "chars_after"), on=run, how="left"
    )
    ranked = eligible.sort(
        ["grade_score", "chars_after", "trajectory_id"], descending=[True, False, False], nulls_last=True
    ).with_columns(rank=pl.int_range(1, pl.len() + 1).over("task_id"))
    frames.append(
        _rows(
            ranked.filter(pl.col("rank") > max_per_task),
            "cap",
            pl.lit("over the per-task cap"),
            pl.format("rank {} of the task's eligible runs; the cap is {}", "rank", pl.lit(max_per_task)),
        )
    )
    order = {s: i for i, s in enumerate(CRITERIA)}
    sft = (
        pl.concat(frames)
        .unique(maintain_order=True)
        .sort("trajectory_id", "batch", pl.col("criterion").replace_strict(order, return_dtype=pl.Int32), "reason")
    )
    rollouts = pl.concat(
        [
            _rows(in_refused, "batch", refused_reason, refused_detail, "rl_rollouts"),
            _rows(holdout, "holdout", reason, pl.col("held_detail"), "rl_rollouts"),
        ]
    )
    # A task only the held-back batches hold is not an RL task either.
    only_refused = in_refused.join(t.join(refused, on="batch", how="anti").select("task_id"), on="task_id", how="anti")
    tasks_refused = _task_rows(
        only_refused.group_by("task_id", maintain_order=True).agg(pl.col("checks").first()),
        "batch",
        refused_reason,
        pl.format("only held-back batches hold it: {}", "checks"),
    )
    secret_checks = (
        secret_checks if secret_checks is not None else pl.DataFrame(schema={"task_id": pl.String, "kinds": pl.String})
    )
    preference = (
        _preference_rows(
            t,
            pl.concat([excluded, lost]),
            pl.concat([duplicates.select(run), repeated.select(run)]),
            untrusted,
            preference_margin,
            preference_max_per_task,
        )
        if "prompt_key" in t.columns
        else pl.DataFrame(schema=SCHEMA)
    )
    return pl.concat(
        [
            sft,
            preference,
            rl_task_exclusions(task_findings),
            held_out_rows(held),
            secret_check_rows(secret_checks),
            tasks_refused,
            rollouts,
        ]
    )


def _preference_rows(t, excluded, duplicates, untrusted, margin: float, cap: int) -> pl.DataFrame:
    """The preference dataset's rows: every run not in a pair, and why (`selection/preference.py`). `duplicates`:
    batch, trajectory_id of the runs dedup does not keep."""
    run = ["batch", "trajectory_id"]
    guarded = excluded.filter(pl.col("criterion").is_in([*GUARDS, "evidence"]))
    guarded = guarded.select(*run, "criterion", "reason", "detail")
    if untrusted is None:
        untrusted = pl.DataFrame(schema={"batch": pl.String, "trajectory_id": pl.String})
    sided = sides(
        t.select(*run, "task_id", "prompt_key", "grade_passed", "grade_score", "chars"), guarded, untrusted, duplicates
    )
    _, unpaired = pair_runs(sided, margin, cap)
    return unpaired.with_columns(dataset=pl.lit("preference")).select(list(SCHEMA)).cast(SCHEMA)


def exclusions_by_bucket(
    buckets: Iterable[str],
    clusters_of: Callable[[list[str]], pl.DataFrame],
    trajectories: pl.DataFrame,
    structure: pl.DataFrame,
    task_findings: pl.DataFrame,
    rollup: pl.DataFrame,
    stats: pl.DataFrame,
    held: pl.DataFrame | None = None,
    secret_checks: pl.DataFrame | None = None,
    max_runs: int | None = None,
    untrusted: pl.DataFrame | None = None,
    **policy,
) -> Iterator[tuple[str, pl.DataFrame]]:
    """`find_exclusions` of the corpus a task bucket at a time (`store/buckets.py`): (bucket, its rows) for each of
    `buckets`, with the dedup clusters of some buckets from `clusters_of(buckets)` and `policy` (max_per_task,
    lost_evidence_policy, accept_ungraded) as `find_exclusions` takes them. Consecutive buckets are computed together
    while their runs number at most `max_runs` (`bucket_groups`). Every bucket's rows together are the whole corpus's:
    its rules look within a task, and a repeated id is kept in its first batch across all of them."""
    t = trajectories.with_columns(kept_in=FIRST_BATCH)
    run = ["batch", "trajectory_id"]
    runs = t.select(*run, task_buckets(t["task_id"]))
    by_run = lambda f: f.join(runs, on=run, maintain_order="left")  # noqa: E731 (in order: a finding's first detail)
    by_task = lambda f: f.with_columns(task_buckets(f["task_id"])) if f is not None else None  # noqa: E731
    inputs = {
        "trajectories": t.with_columns(runs["bucket"]),
        "structure": by_run(structure),
        "task_findings": by_task(task_findings),
        "rollup": by_run(rollup),
        "stats": by_run(stats),
        "held": by_task(held),
        "secret_checks": by_task(secret_checks),
        "untrusted": by_run(untrusted) if untrusted is not None else None,
    }
    for group in bucket_groups(buckets, runs["bucket"], max_runs):
        part = {
            k: f.filter(pl.col("bucket").is_in(group)).drop("bucket") if f is not None else None
            for k, f in inputs.items()
        }
        yield from split_by_bucket(find_exclusions(**part, clusters=clusters_of(group), **policy), group)
