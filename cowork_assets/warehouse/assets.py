"""Dagster wiring of the warehouse stage."""

import dagster as dg
from pydantic import Field

from cowork_assets.ingest.batch import record_root_skips
from cowork_assets.orchestration.metadata import md_table
from cowork_assets.orchestration.partitions import CROSS_BATCH_POOL
from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.store.storage import is_remote
from cowork_assets.warehouse.duckdb_file import build_warehouse, queryable
from cowork_assets.warehouse.trace import trace


@dg.asset(
    group_name="warehouse",
    deps=["dataset_card"],  # the last step of a refresh; the views over every table are listed in its metadata
    kinds={"duckdb"},
    pool=CROSS_BATCH_POOL,
    description="DuckDB database file with one view per Parquet table (every table of the stages before, and "
    "sql/views.sql), rebuilt after each refresh. Open it with `duckdb <data_root>/cowork.duckdb` or "
    "`cowork-curate sql`.",
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


SAMPLE_ID = (
    "A sample or trajectory id, as in a published dataset's `sample_id` (a LIKE pattern such as ops-00042% traces "
    "several)."
)


class TraceConfig(dg.Config):
    sample_id: str = Field(description=SAMPLE_ID)


def trace_config(settings: CurateSettings, sample_id: str) -> dict:
    """The trace op's config for the id the launchpad was given, checked when the launchpad validates it: an empty
    id, or one the local warehouse has no sample or trajectory of, is refused in one sentence and no run starts."""
    if not sample_id.strip():
        raise dg.DagsterInvalidConfigError(
            "sample_id is empty: give a sample id (a published dataset's sample_id)", [], sample_id
        )
    if not is_remote(settings.root) and settings.warehouse_path.exists():
        try:
            trace(settings.warehouse_path, settings.root, sample_id)
        except LookupError as exc:
            raise dg.DagsterInvalidConfigError(str(exc), [], sample_id) from None
    return {"ops": {"trace_sample_op": {"config": {"sample_id": sample_id}}}}


@dg.op(
    description="Logs the chain of a sample: its raw file and line (and the line itself), curation, findings, "
    "exclusion or publication."
)
def trace_sample_op(context: dg.OpExecutionContext, config: TraceConfig, settings: CurateSettings) -> str:
    try:
        lines = trace(
            queryable(settings.root, settings.warehouse_path), settings.root, config.sample_id, settings.raw_path
        )
    except (FileNotFoundError, LookupError) as exc:
        raise dg.Failure(str(exc)) from None
    text = "\n".join(lines)
    context.log.info(f"trace of {config.sample_id}:\n{text}")
    context.add_output_metadata({"trace": dg.MetadataValue.md(f"```\n{text}\n```")})
    return text
