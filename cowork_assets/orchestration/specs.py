"""Dagster asset specs of the registered tables (group, partitions or pool, dependencies, kinds, column schema),
and the checks each asset's own step reports."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import dagster as dg

from cowork_assets.orchestration.metadata import column_schema
from cowork_assets.orchestration.partitions import CROSS_BATCH_POOL, batches, task_buckets
from cowork_assets.store.registry import TABLES
from cowork_assets.store.table import Table


def _dep(table: Table, name: str) -> dg.AssetDep:
    """What a table reads of an input: a bucket reads every batch of a per-batch input, its own bucket of a per-bucket
    one (Dagster's default), all of an unpartitioned one."""
    if table.per_bucket and TABLES[name].per_batch:
        return dg.AssetDep(name, partition_mapping=dg.AllPartitionMapping())
    return dg.AssetDep(name)


def _common(table: Table) -> dict:
    return {
        "group_name": table.group,
        "description": table.description,
        "deps": [_dep(table, name) for name in table.inputs],
        "kinds": {"parquet"} if table.location == "published" else {"parquet", "polars"},
        "metadata": {"dagster/column_schema": column_schema(table.model)},
    }


def spec(name: str) -> dg.AssetSpec:
    """A table as one spec of a multi-asset (which sets partitions and pool for all its specs)."""
    return dg.AssetSpec(name, **_common(TABLES[name]))


# The UI's "Materialize all" on refresh_corpus, and a backfill of its buckets, launch one run over the bucket range
# (each bucket's run would redo every cross-batch step and republish), as the CLI and the sensor do.
SINGLE_RUN = dg.BackfillPolicy.single_run()


def asset_args(name: str) -> dict:
    """The arguments of `@dg.asset` that compute a table: name, group, partitions or pool, deps, ..."""
    table = TABLES[name]
    if table.per_batch:
        where = {"partitions_def": batches}
    elif table.per_bucket:  # a run's buckets in one step, which holds one at a time; a backfill of them is one run
        where = {"partitions_def": task_buckets, "pool": CROSS_BATCH_POOL, "backfill_policy": SINGLE_RUN}
    else:
        where = {"pool": CROSS_BATCH_POOL}
    return {"name": name, **_common(table), **where}


@dataclass(frozen=True)
class StepCheck:
    """A check its asset's own step evaluates once the asset is written, rather than a step of its own: a batch
    run's steps and their events are its fixed cost. `evaluate(settings, batch)`, or `evaluate(settings)` across
    batches."""

    spec: dg.AssetCheckSpec
    evaluate: Callable[..., dg.AssetCheckResult]


def step_check(
    asset: str, description: str, name: str | None = None, additional_deps: Iterable[str] = ()
) -> Callable[[Callable[..., dg.AssetCheckResult]], StepCheck]:
    """Declare `evaluate` as a check of `asset`, named after the function: one result per batch of a per-batch table,
    one for the whole of any other (a per-bucket table's check looks at every bucket)."""

    def declare(evaluate: Callable[..., dg.AssetCheckResult]) -> StepCheck:
        partitions = {"partitions_def": batches} if TABLES[asset].per_batch else {}
        spec = dg.AssetCheckSpec(
            name or evaluate.__name__,
            asset=asset,
            description=description,
            additional_deps=[dg.AssetKey(d) for d in additional_deps],
            **partitions,
        )
        return StepCheck(spec, evaluate)

    return declare


def check_results(checks: Iterable[StepCheck], settings, batch: str | None = None) -> list[dg.AssetCheckResult]:
    """Each check's result, named for its asset and check (a step that reports several must say which)."""
    out = []
    for check in checks:
        result = check.evaluate(settings) if batch is None else check.evaluate(settings, batch)
        out.append(
            dg.AssetCheckResult(
                asset_key=check.spec.asset_key,
                check_name=check.spec.name,
                passed=result.passed,
                severity=result.severity,
                metadata=result.metadata,
                description=result.description,
            )
        )
    return out
