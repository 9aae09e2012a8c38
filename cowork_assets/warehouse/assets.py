"""Dagster wiring of the warehouse stage."""

import dagster as dg

from cowork_assets.ingest.batch import record_root_skips
from cowork_assets.metadata import md_table
from cowork_assets.partitions import CROSS_BATCH_POOL
from cowork_assets.settings import CurateSettings
from cowork_assets.tables import in_warehouse
from cowork_assets.warehouse.duckdb_file import build_warehouse


@dg.asset(
    group_name="warehouse",
    deps=[*(t.name for t in in_warehouse()), "dataset_card"],
    kinds={"duckdb"},
    pool=CROSS_BATCH_POOL,
    description="DuckDB database file with one view per Parquet table (sql/views.sql), rebuilt after each run. "
    "Open it with `duckdb <data_root>/cowork.duckdb` or `cowork-curate sql`.",
)
def warehouse(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
    record_root_skips(settings.raw_path, settings.root)  # the raw root's non-batches, queryable beside the batches'
    rows, skipped = build_warehouse(settings.root, settings.warehouse_path)
    for view, why in skipped.items():
        context.log.warning(f"view {view} skipped: {why}")
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(settings.warehouse_path)),
            "views": md_table(["view", "rows"], sorted(rows.items())),
            "skipped_views": len(skipped),
        }
    )
