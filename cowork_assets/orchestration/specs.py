"""Dagster asset specs of the registered tables: group, partitions or pool, dependencies, kinds, column schema."""

from __future__ import annotations

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
