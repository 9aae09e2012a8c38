"""Recorded grades that cannot be trusted: the benchmark compared runs with something other than the task.

The rules, on the packages and the runs of one batch (a results file lies in one batch):

* `ground_truth_unchanged`: a task whose reference writes something, but whose recorded end state is the
  starting state, so the benchmark passed runs whatever they wrote. Known two ways: its `db_match` check's
  `expected_state` (tau-bench's `gt_data_hash`) is the one of the tasks of its category whose reference writes
  nothing (tasks of a category start from one state); or a run that made no write has its end state recorded
  as right (tau2's `db_check`, tau-bench's `r_actions`). Either way the reference's writes fail in the benchmark's
  environment, or its state comparison does not see them;
* `ground_truth_shared`: tasks whose reference writes differ share one recorded end state (and no task that
  writes nothing has it), so it cannot be what their writes produce;
* `passed_with_other_writes`: a run the benchmark passed whose successful writes are neither the reference's
  nor those of any other run of the task it passed, while one of those made the reference's: the benchmark
  passed two different end states, so it cannot have told those writes apart.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import polars as pl

from cowork_assets import check_types
from cowork_assets.check_types.db_match import TYPE as DB_MATCH

UNCHANGED, SHARED, OTHER_WRITES = "ground_truth_unchanged", "ground_truth_shared", "passed_with_other_writes"


def state_check(checks_json: str) -> dict | None:
    """A package's decidable `db_match` check, if it has one."""
    return next(
        (c for c in check_types.parse(checks_json) if c.get("type") == "db_match" and DB_MATCH.is_decidable(c)), None
    )


def writes_signature(check: dict) -> frozenset:
    """The reference's writes as compared (a multiset of `db_match.write_key`s)."""
    return frozenset(DB_MATCH.prepare(check).writes.items())


def untrusted_tasks(packages: pl.DataFrame, runs: Iterable[tuple[str, str, bool | None, bool]] = ()) -> dict:
    """task_hash -> (kind, detail) of each package whose recorded ground truth ignores its reference writes.
    `packages`: task_hash, category, checks; `runs`: (task_hash, trajectory_id, the recorded result of its
    end-state check, whether it made a successful write)."""
    graded, references = [], {}
    for task_hash, category, checks_json in packages.select("task_hash", "category", "checks").iter_rows():
        check = state_check(checks_json)
        if check is None:
            continue
        references[task_hash] = (check, writes_signature(check))
        if isinstance(check.get("expected_state"), str):
            graded.append((task_hash, category, check["expected_state"], writes_signature(check), check["writes"]))
    unchanged = {(category, state) for _, category, state, writes, _ in graded if not writes}
    groups: dict[tuple[str, str], list] = defaultdict(list)
    for task_hash, category, state, writes, listed in graded:
        if writes:
            groups[category, state].append((task_hash, writes, listed))
    out = {}
    for (category, state), members in groups.items():
        if (category, state) in unchanged:
            for task_hash, _, listed in members:
                out[task_hash] = (
                    UNCHANGED,
                    f"the recorded ground truth {state[:12]} is the end state of the tasks whose reference writes "
                    f"nothing: the reference's writes ({_tools(listed)}) do not change it",
                )
        elif len({writes for _, writes, _ in members}) > 1:
            for task_hash, _, _ in members:
                out[task_hash] = (
                    SHARED,
                    f"{len(members)} tasks whose reference writes differ share the recorded ground truth "
                    f"{state[:12]}: it does not depend on their writes",
                )
    for task_hash, tid, state_ok, wrote in runs:
        check, writes = references.get(task_hash, (None, None))
        if state_ok and not wrote and writes and check.get("match", "exact") == "exact" and task_hash not in out:
            out[task_hash] = (
                UNCHANGED,
                f"run {tid} made no write and its end state was recorded as the reference's: the reference's "
                f"writes ({_tools(check['writes'])}) do not change it",
            )
    return out


def _tools(writes: list[dict]) -> str:
    return ", ".join(sorted({w["tool"] for w in writes}))


def untrusted_runs(runs: Iterable[tuple[str, str, bool | None, bool, frozenset | None]]) -> dict:
    """trajectory_id -> (kind, detail) of passing runs whose writes no other passing run of the task made, while
    another made the reference's.
    `runs`: (trajectory_id, task_hash, recorded_passed, whether the replay meets its `exact` end-state check, its
    successful writes as that check compares them, or None: the task has no such check)."""
    passing: dict[str, list[tuple[str, bool, frozenset]]] = defaultdict(list)
    for tid, task_hash, passed, met, made in runs:
        if passed and made is not None:
            passing[task_hash].append((tid, met, made))
    out = {}
    for members in passing.values():
        for tid, met, made in members:
            others = [m for t, _, m in members if t != tid]
            witness = any(m for t, m, _ in members if t != tid)  # another pass that made the reference's writes
            if witness and not met and made not in others:
                out[tid] = (
                    OTHER_WRITES,
                    f"passed with writes that neither the reference nor any of the task's {len(others)} other "
                    "passing runs made",
                )
    return out
