"""Which graded runs pair up for preference training (DPO, KTO): a passing run of a task as the chosen side, a failing
run of the same task that saw the same prompt (its system messages and first request: `prompt_keys`) as the
rejected side.

A run may be a side only if every rule that guards SFT lets it through (its batch, the holdout, its structure, its
task's consistency, the budget, the chat template: `GUARDS`), and only if its evidence survived curation: a
passing run that lost evidence teaches a value it never saw, and a failing run that lost evidence may have failed
*because* of it, a truncation artefact that must never be the rejected side. A failing run needs a recorded grade
that can be trusted (the re-grade's `grade_untrusted` is empty). Then, a task at a time: the chosen candidates best
first (score, then the shortest), the rejected worst first, one of each per pair while the score margin holds
(`preference_margin`), at most `preference_max_per_task` pairs; near-duplicate runs (a dedup cluster's others) are
not paired again. Every run that is not in a pair gets its reason: the first guard that stops it, or `pairing`
(no run of its task on the other side; only runs that saw another prompt, as a simulated user's first message
differs from trial to trial; or none within the margin) or `cap`.
"""

from __future__ import annotations

import polars as pl

GUARDS = ("batch", "holdout", "structure", "task_consistency", "budget", "chat_template")
PAIR_SCHEMA = {
    "task_id": pl.String,
    "chosen_batch": pl.String,
    "chosen_id": pl.String,
    "rejected_batch": pl.String,
    "rejected_id": pl.String,
    "margin": pl.Float64,
}
UNPAIRED_SCHEMA = {
    "batch": pl.String,
    "trajectory_id": pl.String,
    "task_id": pl.String,
    "criterion": pl.String,
    "reason": pl.String,
    "detail": pl.String,
}


def sides(runs: pl.DataFrame, guarded: pl.DataFrame, untrusted: pl.DataFrame, duplicates: pl.DataFrame) -> pl.DataFrame:
    """Each run's side, or why it has none. `runs`: batch, trajectory_id, task_id, prompt_key (`prompt_keys`),
    grade_passed, grade_score, chars; `guarded`: the SFT exclusions rows (batch, trajectory_id, criterion, reason,
    detail) whose criterion guards a side (`GUARDS`, and `evidence` for lost or redacted evidence); `untrusted`:
    batch, trajectory_id of runs whose recorded grade cannot be trusted; `duplicates`: batch, trajectory_id of the
    runs a dedup cluster does not keep. Returns `runs` with side (`chosen`, `rejected` or null) and, where null,
    criterion, reason and detail."""
    run = ["batch", "trajectory_id"]
    first = guarded.group_by(run, maintain_order=True).agg(pl.col("criterion", "reason", "detail").first())
    evidence = pl.col("criterion") == "evidence"
    out = (
        runs.join(first, on=run, how="left")
        .join(untrusted.select(*run, untrusted=pl.lit(True)), on=run, how="left")
        .join(duplicates.select(*run, duplicate=pl.lit(True)), on=run, how="left")
    )
    passed, failed = pl.col("grade_passed") == True, pl.col("grade_passed") == False  # noqa: E712 (null: ungraded)
    why = (
        pl.when(pl.col("criterion").is_not_null() & ~evidence)
        .then(pl.struct("criterion", "reason", "detail"))
        .when(evidence & failed)
        .then(
            pl.struct(
                criterion=pl.lit("evidence"),
                reason=pl.lit("a failure truncation may have caused"),
                detail=pl.format("{}: never a rejected side", "detail"),
            )
        )
        .when(evidence)
        .then(pl.struct("criterion", "reason", "detail"))
        .when(pl.col("grade_passed").is_null())
        .then(pl.struct(criterion=pl.lit("grade"), reason=pl.lit("not graded"), detail=pl.lit("no grade recorded")))
        .when(failed & pl.col("untrusted").fill_null(False))
        .then(
            pl.struct(
                criterion=pl.lit("grade"),
                reason=pl.lit("grade untrusted"),
                detail=pl.lit("the re-grade cannot trust its recorded grade (regrade.grade_untrusted)"),
            )
        )
        .when(pl.col("duplicate").fill_null(False))
        .then(pl.struct(criterion=pl.lit("dedup"), reason=pl.lit("duplicate"), detail=pl.lit("its cluster's kept run")))
    )
    return (
        out.with_columns(why=why)
        .with_columns(
            side=pl.when(pl.col("why").is_null() & passed)
            .then(pl.lit("chosen"))
            .when(pl.col("why").is_null() & failed)
            .then(pl.lit("rejected")),
        )
        .drop("criterion", "reason", "detail", "untrusted", "duplicate")
        .unnest("why")
    )


def pair_runs(sided: pl.DataFrame, margin: float, cap: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(pairs, unpaired) of runs with their sides (`sides`): pairs within a task package, best chosen with worst
    rejected first, each while its score margin is at least `margin`, at most `cap` a task; the unpaired rows say
    why (their own reason, `pairing` or `cap`)."""
    key = ["task_id", "prompt_key"]
    score = pl.col("grade_score").fill_null(pl.col("grade_passed").cast(pl.Float64))
    eligible = sided.filter(pl.col("side").is_not_null()).with_columns(score=score)
    rank = pl.int_range(pl.len()).over(key)
    chosen = (  # best first: the highest score, then the shortest
        eligible.filter(pl.col("side") == "chosen")
        .sort(["score", "chars", "trajectory_id"], descending=[True, False, False])
        .with_columns(rank=rank)
    )
    rejected = (  # worst first: the lowest score, then the shortest
        eligible.filter(pl.col("side") == "rejected").sort(["score", "chars", "trajectory_id"]).with_columns(rank=rank)
    )
    ranked = pl.concat([chosen, rejected])
    joined = chosen.join(rejected, on=[*key, "rank"], suffix="_r").with_columns(
        margin=pl.col("score") - pl.col("score_r")
    )
    made = joined.filter(pl.col("margin") >= margin).with_columns(nth=pl.int_range(pl.len()).over(*key))
    pairs = made.filter(pl.col("nth") < cap)
    capped = made.filter(pl.col("nth") >= cap)
    used = pl.concat(
        [
            pairs.select("batch", "trajectory_id"),
            pairs.select(batch="batch_r", trajectory_id="trajectory_id_r"),
        ]
    )
    over = pl.concat(
        [capped.select("batch", "trajectory_id"), capped.select(batch="batch_r", trajectory_id="trajectory_id_r")]
    )
    run = ["batch", "trajectory_id"]
    other = pl.when(pl.col("side") == "chosen").then(pl.lit("failing")).otherwise(pl.lit("passing"))
    without_pair = ranked.join(used, on=run, how="anti").join(over, on=run, how="anti")
    has = lambda side: (pl.col("side") == side).any()  # noqa: E731
    counterparts = pl.when(pl.col("side") == "chosen").then(pl.col("rejected_any")).otherwise(pl.col("chosen_any"))
    in_prompt = pl.when(pl.col("side") == "chosen").then(pl.col("rejected_here")).otherwise(pl.col("chosen_here"))
    without_pair = without_pair.join(
        eligible.group_by("task_id").agg(chosen_any=has("chosen"), rejected_any=has("rejected")), on="task_id"
    ).join(eligible.group_by(*key).agg(chosen_here=has("chosen"), rejected_here=has("rejected")), on=key)
    reason = (
        pl.when(~counterparts)
        .then(pl.lit("no counterpart"))
        .when(~in_prompt)
        .then(pl.lit("another prompt"))
        .otherwise(pl.lit("below the margin"))
    )
    detail = (
        pl.when(~counterparts)
        .then(pl.format("no {} run of its task to pair it with", other))
        .when(~in_prompt)
        .then(pl.format("the {} runs of its task saw another prompt (another system prompt or first request)", other))
        .otherwise(pl.format("no {} run left within a score margin of {}", other, pl.lit(margin)))
    )
    unpaired = pl.concat(
        [
            sided.filter(pl.col("side").is_null()).select(*UNPAIRED_SCHEMA),
            without_pair.select(*run, "task_id", criterion=pl.lit("pairing"), reason=reason, detail=detail),
            ranked.join(over, on=run, how="semi").select(
                *run,
                "task_id",
                criterion=pl.lit("cap"),
                reason=pl.lit("over the per-task cap"),
                detail=pl.format("its task has {} pairs already (preference_max_per_task)", pl.lit(cap)),
            ),
        ]
    ).cast(UNPAIRED_SCHEMA)
    return (
        pairs.select(
            "task_id",
            chosen_batch="batch",
            chosen_id="trajectory_id",
            rejected_batch="batch_r",
            rejected_id="trajectory_id_r",
            margin="margin",
        ).cast(PAIR_SCHEMA),
        unpaired,
    )


def prompt_keys(messages: pl.LazyFrame) -> pl.LazyFrame:
    """batch, trajectory_id, prompt_key: a hash of each run's prompt, its messages up to its first user turn (the
    system prompt and the request), from the `messages` table."""
    first_user = pl.col("message_index").filter(pl.col("role") == "user").min().over("batch", "trajectory_id")
    return (
        messages.select("batch", "trajectory_id", "message_index", "role", "content")
        .filter(pl.col("role").is_in(["system", "user"]))
        .filter(pl.col("message_index") <= first_user)
        .sort("batch", "trajectory_id", "message_index")
        .group_by("batch", "trajectory_id")
        .agg(prompt_key=pl.concat_str(pl.col("role"), pl.col("content").fill_null("")).str.join("\u0000").hash())
    )
