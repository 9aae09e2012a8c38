"""A batch's results as events of its own partition, for a step that runs several batches.

A step over a range of partitions materializes its outputs for every partition of the range or for none, so a batch
that fails would take its neighbours down, or show a materialization it does not have. Instead, the step reports
each batch as it finishes: a materialization of each of its tables for that batch, and each check's evaluation for
that batch, naming the materialization it judged (the UI counts a partition's check only then). The step yields no
outputs; Dagster records a batch it planned and never materialized as failed when the run fails.

`AssetCheckEvaluationTargetMaterializationData` is not exported at Dagster's top level: this module, and only this
one, imports it. tests/orchestration/test_batch_runs.py fails if an upgrade changes it (each batch's checks are
counted for its own partition).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)


class OneBatch:
    """The step's context as a stage sees it: the step's, with `partition_key` the batch being processed."""

    def __init__(self, context: dg.AssetExecutionContext, batch: str):
        self._context, self.partition_key = context, batch

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


def batch_events(context: dg.AssetExecutionContext, batch: str, results: Iterable) -> Iterator:
    """The stage's results (`MaterializeResult`s naming their asset, `AssetCheckResult`s) as the batch's events."""
    targets: dict[dg.AssetKey, Any] = {}  # an asset's materialization, looked up once for all its checks
    for result in results:
        if isinstance(result, dg.MaterializeResult):
            yield dg.AssetMaterialization(result.asset_key, partition=batch, metadata=result.metadata, tags=result.tags)
            checks = result.check_results or []
        else:
            checks = [result]
        for check in checks:
            if check.asset_key not in targets:
                targets[check.asset_key] = _latest(context.instance, check.asset_key, batch)
            yield dg.AssetCheckEvaluation(
                asset_key=check.asset_key,
                check_name=check.check_name,
                passed=check.passed,
                metadata=check.metadata,
                severity=check.severity,
                description=check.description,
                partition=batch,
                target_materialization_data=targets[check.asset_key],
            )


def _latest(instance: dg.DagsterInstance, asset: dg.AssetKey, batch: str):
    """The batch's latest materialization of the asset (the one the step just reported), as a check's target."""
    records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=asset, asset_partitions=[batch]), 1)
    if not records.records:
        return None
    record = records.records[0]
    return AssetCheckEvaluationTargetMaterializationData(
        storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
    )
