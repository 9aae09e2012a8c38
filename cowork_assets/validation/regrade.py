"""Re-grade every run by replaying its task's checks on its transcript, and say why a verdict differs
from the one the benchmark recorded.

The replay is `rewards.score_turns` (the check types' own rules). A run is compared only when it has a
recorded verdict and at least one check the replay can decide. Why they differ, as `disagreement`:

* `grader counts calls`: recorded pass, and a `distinct_items` check is unmet although the run made as
  many calls to its tool as the check expects (duplicate creations counted as distinct items);
* `replay misses a check`: recorded pass, and a decidable check is unmet in the transcript;
* `undecided check failed`: recorded fail, every decidable check is met, and the recorded results say a
  check the replay cannot decide (database, environment, judge) failed;
* `replay meets every check`: recorded fail, every decidable check is met, and nothing recorded says why;
* `undecidable`: recorded verdict, but no check the replay can decide (not counted in the agreement).
"""

from __future__ import annotations

import orjson
import polars as pl

from cowork_assets import checks
from cowork_assets.checks import distinct_items
from cowork_assets.rewards import score_turns, turns_by_trajectory
from cowork_assets.schema import nest, polars_schema
from cowork_assets.validation.schemas import CHECK, Regrade

COLUMNS = polars_schema(Regrade)
RUN_COLUMNS = {name: dtype for name, dtype in COLUMNS.items() if name != "checks"}  # a run's row, its checks apart
CHECK_FIELDS = list(CHECK.to_schema())
UNDECIDABLE = "undecidable"


def _why(recorded: bool, rows: list[dict], plan: checks.Plan, turns) -> tuple[str, str]:
    unmet = [r for r in rows if r["decidable"] and not r["met"]]
    if recorded:
        calls: dict[str, int] = {}
        for _, made in turns:
            for name, _ in made:
                calls[name] = calls.get(name, 0) + 1
        for check, _ in plan.checks:
            spec = distinct_items.spec(check) if check.get("type") == "distinct_items" else None
            if spec and any(r["check_id"] == str(check.get("id")) for r in unmet) and calls.get(spec[0], 0) >= spec[2]:
                return "grader counts calls", (
                    f"{check.get('id')}: {calls[spec[0]]} {spec[0]} calls, fewer than "
                    f"{spec[2]} distinct {spec[1]} values"
                )
        return "replay misses a check", ", ".join(f"{r['check_id']} ({r['type']})" for r in unmet)
    failed = [r for r in rows if not r["decidable"] and r["recorded"] is False]
    if failed:
        return "undecided check failed", ", ".join(f"{r['check_id']} ({r['type']})" for r in failed)
    return "replay meets every check", ", ".join(
        r["check_id"] for r in rows if r["recorded"] is False
    ) or "no detail recorded"


def regrade(batch: str, runs: pl.DataFrame, messages: pl.DataFrame, packages: pl.DataFrame) -> pl.DataFrame:
    """One row per run (`runs`: trajectory_id, task_id, category, task_hash, grade_score, grade_passed,
    grade_checks) with the recorded and the replayed verdict."""
    plans = {  # only the tasks of these runs: a chunk of a batch must not parse the whole batch's tasks
        h: checks.Plan(checks.parse(c))
        for h, c in packages.filter(pl.col("task_hash").is_in(runs["task_hash"].unique().implode()))
        .select("task_hash", "checks")
        .unique("task_hash")
        .iter_rows()
    }
    turns_of = turns_by_trajectory(messages)
    out, per_check = [], {name: [] for name in ("run", *CHECK_FIELDS)}
    for run, (tid, task_id, category, task_hash, recorded_score, recorded, grade_checks) in enumerate(
        runs.select(
            "trajectory_id", "task_id", "category", "task_hash", "grade_score", "grade_passed", "grade_checks"
        ).iter_rows()
    ):
        plan, turns = plans[task_hash], turns_of.get(tid, [])
        result = score_turns(turns, plan)
        recorded_checks = orjson.loads(grade_checks) if grade_checks else {}
        rows = [{**r, "recorded": recorded_checks.get(r["check_id"])} for r in result.checks]
        for r in rows:
            per_check["run"].append(run)
            for name in CHECK_FIELDS:
                per_check[name].append(r[name])
        kind = detail = None
        if recorded is not None and result.passed is None:
            kind, detail = UNDECIDABLE, ", ".join(sorted({r["type"] for r in rows})) or "the task has no checks"
        elif recorded is not None and recorded != result.passed:
            kind, detail = _why(recorded, rows, plan, turns)
        out.append(
            (
                batch,
                tid,
                task_id,
                category,
                recorded,
                recorded_score,
                result.passed,
                result.reward if result.passed is not None else None,
                kind,
                detail,
            )
        )
    per_run = pl.DataFrame(out, orient="row", schema=RUN_COLUMNS)
    return nest(
        per_run, pl.DataFrame(per_check, schema={"run": pl.UInt32, **CHECK.to_schema()}), "run", "checks", CHECK
    ).select(COLUMNS.names())


def agreement(regraded: pl.DataFrame) -> dict:
    """The agreement rate over compared runs, and the disagreeing runs grouped by reason."""
    compared = regraded.filter(pl.col("recorded_passed").is_not_null() & pl.col("regraded_passed").is_not_null())
    agree = compared.filter(pl.col("disagreement").is_null()).height
    reasons = (
        regraded.filter(pl.col("disagreement").is_not_null())
        .group_by("disagreement")
        .agg(runs=pl.len(), examples=pl.col("trajectory_id").head(3))
        .sort("runs", "disagreement", descending=[True, False])
    )
    return {
        "compared": compared.height,
        "agree": agree,
        "rate": agree / compared.height if compared.height else None,
        "reasons": [(r, n, list(ex)) for r, n, ex in reasons.iter_rows()],
    }
