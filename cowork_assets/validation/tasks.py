"""task_findings across all batches, a part of the packages or a group of batches at a time: only the columns each check
needs are read."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from cowork_assets import check_types
from cowork_assets.check_types import distinct_items
from cowork_assets.validation import ground_truth
from cowork_assets.validation.consistency import (
    SCHEMA,
    call_counting,
    interface,
    package_findings,
    referenced_ids,
    unexposed_calls,
)
from cowork_assets.validation.schemas import TaskFindings


def _package_tables(packages: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(exposed tools per package, distinct_items specs per package)."""
    tools, specs = [], []
    for task_hash, tools_json, checks_json in packages.select("task_hash", "tools", "checks").iter_rows():
        tools += [(task_hash, name, endpoint) for name, endpoint in interface(tools_json)[0].items()]
        for c in check_types.parse(checks_json):
            if c.get("type") == "distinct_items" and (spec := distinct_items.spec(c)):
                specs.append((task_hash, str(c.get("id")), *spec))
    return (
        pl.DataFrame(
            tools, schema={"task_hash": pl.String, "tool_name": pl.String, "endpoint": pl.String}, orient="row"
        ),
        pl.DataFrame(
            specs,
            schema={
                "task_hash": pl.String,
                "check_id": pl.String,
                "tool": pl.String,
                "key": pl.String,
                "expected": pl.Int64,
            },
            orient="row",
        ),
    )


LIGHT = ["task_hash", "tools", "checks"]  # what the runs are checked against
RUN = ["batch", "trajectory_id"]  # a run's key: a trajectory id is unique within its batch
CANDIDATES = {"task_id": pl.String, "task_hash": pl.String, "check_id": pl.String, "value": pl.String}


def find_task_findings(
    packages: Iterable[pl.DataFrame], batches: Iterable[tuple[pl.LazyFrame, pl.LazyFrame, pl.LazyFrame]]
) -> pl.DataFrame:
    """Findings over all batches, holding one part of the packages or one group of batches at a time.

    `packages`: one copy of each task package, in parts; `batches`: the (trajectories, tool_calls, regrade) of a
    batch or a group of batches at a time, a run known by its batch and id. The packages are read first (their
    findings, exposed tools, counting specs and the ids their checks name that the initial state lacks); then each
    group's runs are checked against them, and the recorded grades its re-grade found untrustworthy become
    findings."""
    frames, light, candidates = [], [], []
    for part in packages:
        rows = part.select("task_id", "task_hash", "request", "tools", "checks", "initial_state").iter_rows()
        frames.append(pl.DataFrame([f for row in rows for f in package_findings(*row)], schema=SCHEMA, orient="row"))
        light.append(part.select(LIGHT))
        candidates.append(_unknown_candidates(part))
    tools, specs = _package_tables(pl.concat(light) if light else pl.DataFrame(schema=dict.fromkeys(LIGHT, pl.String)))
    candidates = pl.concat(candidates) if candidates else pl.DataFrame(schema=CANDIDATES)
    seen = [pl.DataFrame(schema={"task_hash": pl.String, "value": pl.String})]
    untrusted = [pl.DataFrame(schema=SCHEMA)]
    for trajectories, tool_calls, regraded in batches:
        runs = trajectories.select(*RUN, "task_id", "task_hash")
        untrusted.append(untrusted_grades(regraded.join(runs.select(*RUN, "task_hash"), on=RUN)))
        calls = tool_calls.select(*RUN, "tool_name").join(runs, on=RUN)
        frames.append(unexposed_calls(calls.collect(), tools))
        if specs.height:
            counted = (
                tool_calls.filter(pl.col("tool_name").is_in(specs["tool"].unique().to_list()))
                .select(*RUN, "tool_name", "arguments", observation=pl.col("observation").str.slice(0, 200))
                .join(runs, on=RUN)
                .collect()
            )
            grades = trajectories.select(*RUN, "grade_checks").collect()
            frames.append(call_counting(counted, specs, grades))
        if candidates.height:
            seen.append(_seen(candidates, runs, tool_calls))
    frames.append(_unknown_references(candidates, pl.concat(seen).unique()))
    frames.append(pl.concat(untrusted).unique(maintain_order=True))  # a task's, once however many batches hold it
    return (
        pl.concat([f.cast(SCHEMA) for f in frames])
        .sort("task_id", "trajectory_id", "kind", "check_id", "detail", nulls_last=True)
        .select(list(TaskFindings.to_schema().columns))
    )


def untrusted_grades(regraded: pl.LazyFrame) -> pl.DataFrame:
    """The recorded grades re-grade found untrustworthy (`ground_truth.py`): a task whose ground truth ignores its
    writes once, a run whose pass no other passing run backs as itself."""
    task_level = pl.col("grade_untrusted") != ground_truth.OTHER_WRITES
    return (
        regraded.filter(pl.col("grade_untrusted").is_not_null())
        .select(
            "task_id",
            "task_hash",
            trajectory_id=pl.when(task_level).then(None).otherwise("trajectory_id"),
            batch=pl.when(task_level).then(None).otherwise("batch"),
            check_id=pl.lit(None, pl.String),
            kind="grade_untrusted",
            severity=pl.lit("error"),
            detail="grade_untrusted_detail",
            suggestion=pl.lit("do not train on its recorded grades: re-run the benchmark's grader, or use regrade"),
        )
        .unique(maintain_order=True)
        .collect()
    )


def _unknown_candidates(packages: pl.DataFrame) -> pl.DataFrame:
    """(task, check, id) for each id a check names that its package's initial state does not contain."""
    return pl.DataFrame(
        [
            (task_id, task_hash, check_id, value)
            for task_id, task_hash, checks, state in packages.select(
                "task_id", "task_hash", "checks", "initial_state"
            ).iter_rows()
            for check_id, value in referenced_ids(checks)
            if value.casefold() not in state.casefold()
        ],
        schema=CANDIDATES,
        orient="row",
    )


def _seen(candidates: pl.DataFrame, runs: pl.LazyFrame, tool_calls: pl.LazyFrame) -> pl.DataFrame:
    """The (task_hash, id) candidates that some observation of these runs contains."""
    return (
        tool_calls.select(*RUN, "observation")
        .join(runs.select(*RUN, "task_hash"), on=RUN)
        .filter(pl.col("task_hash").is_in(candidates["task_hash"].unique().implode()))
        .join(candidates.lazy().select("task_hash", "value"), on="task_hash")
        .filter(pl.col("observation").str.contains(pl.col("value"), literal=True))
        .select("task_hash", "value")
        .unique()
        .collect()
    )


def _unknown_references(candidates: pl.DataFrame, seen: pl.DataFrame) -> pl.DataFrame:
    """Ids a check names that are neither in the initial state nor seen in any observation of any run."""
    missing = candidates.join(seen, on=["task_hash", "value"], how="anti", maintain_order="left")
    return missing.select(
        "task_id",
        "task_hash",
        trajectory_id=pl.lit(None, pl.String),
        batch=pl.lit(None, pl.String),
        check_id="check_id",
        kind=pl.lit("unknown_reference"),
        severity=pl.lit("error"),
        detail=pl.format(
            "check {} references {}, which is not in the initial state and no run ever saw", "check_id", "value"
        ),
        suggestion=pl.lit("add the record to initial_state, or fix the id in the check"),
    )
