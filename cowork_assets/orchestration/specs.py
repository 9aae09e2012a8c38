"""Dagster asset specs of the registered tables (group, partitions or pool, dependencies, kinds, column schema),
and the checks each asset's own step reports."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import dagster as dg

from cowork_assets.orchestration.metadata import column_schema
from cowork_assets.orchestration.partitions import CROSS_BATCH_POOL, batches
from cowork_assets.store.registry import TABLES, Table


def _common(table: Table) -> dict:
    return {
        "group_name": table.group,
        "description": table.description,
        "deps": [dg.AssetKey(name) for name in table.inputs],
        "kinds": {"parquet"} if table.location == "published" else {"parquet", "polars"},
        "metadata": {"dagster/column_schema": column_schema(table.model)},
    }


def spec(name: str) -> dg.AssetSpec:
    """A table as one spec of a multi-asset (which sets partitions and pool for all its specs)."""
    return dg.AssetSpec(name, **_common(TABLES[name]))


def asset_args(name: str) -> dict:
    """The arguments of `@dg.asset` that compute a table: name, group, partitions or pool, deps, ..."""
    table = TABLES[name]
    where = {"partitions_def": batches} if table.per_batch else {"pool": CROSS_BATCH_POOL}
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
    """Declare `evaluate` as a check of `asset` (partitioned as the asset's table is), named after the function."""

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
