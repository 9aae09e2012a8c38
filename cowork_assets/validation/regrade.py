"""Re-grade every run by replaying its task's checks on its transcript, and say why a verdict differs
from the one the benchmark recorded.

The replay is `rewards.scored` (the check types' own rules, as `compute_score` applies them). A run is compared
when it has a recorded verdict, at least one check the replay counts, and a recorded grade that can be trusted
(`ground_truth.py`: `grade_untrusted` names why not). Why the verdicts differ, as `disagreement`, is each check
type's own explanation (`why_unmet`, `why_met`, tried in the types' `rank` order):

recorded pass, replay fail (the first that applies):
* `grader counts calls`: a `distinct_items` check is unmet although the run made as many calls to its tool as
  the check expects (duplicate creations counted as distinct items);
* `write arguments differ` / `reference write not made` / `extra write`: the end-state check (`db_match`) is
  unmet, and the detail names the writes: a reference write made with other values, one not made, one more;
* `output not found`: a keyword the benchmark looks for is not in any assistant message as the replay reads it;
* `reference call not made`: a counted `tool_called` check is unmet;
* `replay misses a check`: another decidable check is unmet;

recorded fail, replay pass:
* `undecided check failed`: the recorded results say a check the replay cannot decide (environment, judge)
  failed;
* `recorded state differs`: the run made the reference's writes, yet the benchmark recorded its end state as
  wrong (a difference the writes do not show: an argument compared as free text, an order that mattered);
* `recorded output missing` / `recorded call missing`: the benchmark recorded a keyword or call check as
  failed that the replay finds met;
* `failure without check results`: the benchmark recorded no check's result (the run ended in an error);
* `replay meets every check`: the recorded results say nothing failed;

either way, on a task or run whose recorded grade cannot be trusted (`grade_untrusted`), the reason names it:
* `ground truth ignores the writes`, `ground truth shared by other tasks`, `passing runs differ in writes`
  (`ground_truth.py`), when the recorded verdict is what the task's other counted checks give: the writes, which
  the replay compares and the benchmark did not, are why.

`undecidable`: a recorded verdict, but no check the replay counts (not compared).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import orjson
import polars as pl

from cowork_assets import check_types
from cowork_assets.check_types._base import Unmet
from cowork_assets.check_types.db_match import TYPE as DB_MATCH
from cowork_assets.rewards import Score, scored, turns_by_trajectory
from cowork_assets.store.models import nest, polars_schema
from cowork_assets.validation import ground_truth
from cowork_assets.validation.schemas import CHECK, Regrade

COLUMNS = polars_schema(Regrade)
RUN_COLUMNS = {name: dtype for name, dtype in COLUMNS.items() if name != "checks"}  # a run's row, its checks apart
CHECK_FIELDS = list(CHECK.to_schema())
UNDECIDABLE = "undecidable"
RUN_FIELDS = ("trajectory_id", "task_id", "category", "task_hash", "grade_score", "grade_passed", "grade_checks")
UNTRUSTED_REASON = {
    ground_truth.UNCHANGED: "ground truth ignores the writes",
    ground_truth.SHARED: "ground truth shared by other tasks",
    ground_truth.OTHER_WRITES: "passing runs differ in writes",
}


@dataclass
class Replayed:
    """One run's replay: what the row reports and what its reasons are worked out from."""

    run: tuple  # RUN_FIELDS
    score: Score
    rows: list[dict]  # per check, with its recorded result
    plan: check_types.Plan
    states: list[dict]
    turns: list
    made: frozenset | None  # its successful writes as the end-state check compares them (None: no such check)


def _state_index(plan: check_types.Plan) -> int | None:
    return next((i for i, (c, kind) in enumerate(plan.checks) if kind is DB_MATCH and DB_MATCH.is_decidable(c)), None)


def _replay(run: tuple, plan: check_types.Plan, turns: list) -> Replayed:
    firsts, states = check_types.replay(plan, turns)
    score = scored(plan, check_types.by_id(plan, firsts))
    recorded = orjson.loads(run[6]) if run[6] else {}
    rows = [{**r, "recorded": recorded.get(r["check_id"])} for r in score.checks]
    at = _state_index(plan)
    made = None if at is None else frozenset(DB_MATCH.made(plan.prepared[at], states[at]).items())
    return Replayed(run, score, rows, plan, states, turns, made)


def replay_grades(
    batch: str, chunks: Iterable[tuple[pl.DataFrame, pl.DataFrame]], packages: pl.DataFrame
) -> pl.DataFrame:
    """One row per run with the recorded and the replayed verdict. `chunks`: the batch's runs (RUN_FIELDS) and
    their messages, whole trajectories per chunk; `packages`: task_hash, category, checks of the batch."""
    tasks = packages.unique("task_hash")
    plans = {h: check_types.Plan(check_types.parse(c)) for h, c in tasks.select("task_hash", "checks").iter_rows()}
    replayed: list[Replayed] = []
    for runs, messages in chunks:
        turns_of = turns_by_trajectory(messages)
        replayed += [
            _replay(run, plans[run[3]], turns_of.get(run[0], [])) for run in runs.select(RUN_FIELDS).iter_rows()
        ]
    evidence = [
        (r.run[3], r.run[0], r.rows[at]["recorded"], bool(r.made))
        for r in replayed
        if (at := _state_index(r.plan)) is not None
    ]
    untrusted = ground_truth.untrusted_tasks(tasks, evidence)
    untrusted_runs = ground_truth.untrusted_runs(
        (r.run[0], r.run[3], r.run[5], bool(r.rows[at]["met"]), r.made)
        for r in replayed
        if (at := _state_index(r.plan)) is not None and r.plan.prepared[at].exact
    )
    return _table(batch, replayed, untrusted, untrusted_runs)


def _table(batch: str, replayed: list[Replayed], untrusted: dict, untrusted_runs: dict) -> pl.DataFrame:
    out, per_check = [], {name: [] for name in ("run", *CHECK_FIELDS)}
    for i, r in enumerate(sorted(replayed, key=lambda r: r.run[0])):
        tid, task_id, category, task_hash, recorded_score, recorded, _ = r.run
        for row in r.rows:
            per_check["run"].append(i)
            for name in CHECK_FIELDS:
                per_check[name].append(row[name])
        issue = untrusted.get(task_hash) or untrusted_runs.get(tid)  # the task's ground truth first: the root cause
        kind = detail = None
        if recorded is not None and r.score.passed is None:
            kind, detail = UNDECIDABLE, ", ".join(sorted({row["type"] for row in r.rows})) or "the task has no checks"
        elif recorded is not None and recorded != r.score.passed:
            kind, detail = _why_untrusted(r, issue) if issue else _why(r)
        out.append(
            (
                batch,
                tid,
                task_id,
                category,
                recorded,
                recorded_score,
                r.score.passed,
                r.score.reward if r.score.passed is not None else None,
                issue[0] if issue else None,
                issue[1] if issue else None,
                kind,
                detail,
            )
        )
    per_run = pl.DataFrame(out, orient="row", schema=RUN_COLUMNS)
    return nest(
        per_run, pl.DataFrame(per_check, schema={"run": pl.UInt32, **CHECK.to_schema()}), "run", "checks", CHECK
    ).select(COLUMNS.names())


def _why_untrusted(r: Replayed, issue: tuple[str, str]) -> tuple[str, str]:
    """The reason on a task or run whose recorded grade cannot be trusted: the issue, when the recorded verdict is
    what the benchmark's own comparison gives; else the reason the replay finds."""
    kind, detail = issue
    others = [row for row in r.rows if row["decidable"] and row["weight"] > 0 and row["type"] != "db_match"]
    if all(row["met"] for row in others) != r.run[5]:  # the verdict is not the rest's: the writes are not why
        return _why(r)
    return UNTRUSTED_REASON[kind], detail


def _by_rank(r: Replayed, keep) -> list[tuple[check_types.CheckType, list[int]]]:
    """The positions of the checks whose rows `keep` takes (rows are the plan's checks, in order), grouped by
    type, in the order the types explain."""
    groups: dict[check_types.CheckType, list[int]] = {}
    for i, (row, (_, kind)) in enumerate(zip(r.rows, r.plan.checks, strict=True)):
        if kind is not None and keep(row):
            groups.setdefault(kind, []).append(i)
    return sorted(groups.items(), key=lambda group: group[0].rank)


def _why(r: Replayed) -> tuple[str, str]:
    if r.run[5]:
        return _why_not_met(r)
    rows = r.rows
    failed = [row for row in rows if not row["decidable"] and row["recorded"] is False]
    if failed:
        return "undecided check failed", _ids(failed)
    for kind, found in _by_rank(r, lambda row: row["decidable"] and row["met"] and row["recorded"] is False):
        if explained := kind.why_met(_ids([rows[i] for i in found])):
            return explained
    if all(row["recorded"] is None for row in rows):
        return "failure without check results", (
            "the benchmark recorded a failure and no check's result: the run ended in an error "
            "(tau-bench: reward_info null; tau2: termination agent_error)"
        )
    return "replay meets every check", ", ".join(row["check_id"] for row in rows if row["recorded"] is False)


def _why_not_met(r: Replayed) -> tuple[str, str]:
    """Why a run the benchmark passed is not met in the replay, as the type of its unmet checks explains it."""

    def counted_unmet(row: dict) -> bool:
        return row["decidable"] and row["weight"] > 0 and not row["met"]

    calls_seen = Counter(call[0] for _, made in r.turns for call in made)
    for kind, found in _by_rank(r, counted_unmet):
        unmet = [Unmet(r.plan.checks[i][0], r.plan.prepared[i], r.states[i], _ids([r.rows[i]])) for i in found]
        if explained := kind.why_unmet(unmet, calls_seen):
            return explained
    return "replay misses a check", _ids([row for row in r.rows if counted_unmet(row)])


def _ids(rows: list[dict]) -> str:
    return ", ".join(f"{row['check_id']} ({row['type']})" for row in rows)


def agreement(regraded: pl.DataFrame) -> dict:
    """The agreement rate over compared runs (a recorded grade that can be trusted and a counted check), the
    runs whose recorded grade cannot be trusted, and the disagreeing runs grouped by reason."""
    compared = regraded.filter(
        pl.col("recorded_passed").is_not_null()
        & pl.col("regraded_passed").is_not_null()
        & pl.col("grade_untrusted").is_null()
    )
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
        "untrusted": regraded.filter(pl.col("grade_untrusted").is_not_null()).height,
        "reasons": [(r, n, list(ex)) for r, n, ex in reasons.iter_rows()],
    }
