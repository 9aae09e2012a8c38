"""Dagster wiring of the evidence stage."""

from collections import Counter

import dagster as dg
import polars as pl

from cowork_assets.evidence.build import build_evidence
from cowork_assets.evidence.schemas import Evidence
from cowork_assets.orchestration.metadata import counts_md, md_table, written
from cowork_assets.orchestration.specs import asset_args
from cowork_assets.runtime.progress import throttled
from cowork_assets.settings import CurateSettings
from cowork_assets.store.models import arrow_schema
from cowork_assets.store.storage import ParquetSink, iter_trajectory_chunks, partition_file


@dg.asset(**asset_args("evidence"))
def evidence(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
    batch, root = context.partition_key, settings.root
    trajectories = pl.read_parquet(partition_file(root, "trajectories", batch), columns=["trajectory_id", "task_hash"])
    packages = pl.read_parquet(partition_file(root, "task_packages", batch), columns=["task_hash", "checks", "tools"])
    calls = pl.read_parquet(
        partition_file(root, "tool_calls", batch), columns=["trajectory_id", "message_index", "tool_name", "arguments"]
    )
    sink = ParquetSink(partition_file(root, "evidence", batch), arrow_schema(Evidence))
    unknown: Counter = Counter()
    statuses: Counter = Counter()
    progress = throttled(context.log.info)
    try:
        for messages in iter_trajectory_chunks(partition_file(root, "messages", batch)):
            ids = messages["trajectory_id"].unique().to_list()
            chunk = trajectories.filter(pl.col("trajectory_id").is_in(ids))
            frame, unk = build_evidence(
                batch,
                chunk,
                packages.filter(pl.col("task_hash").is_in(chunk["task_hash"].unique().to_list())),
                calls.filter(pl.col("trajectory_id").is_in(ids)),
                messages,
            )
            sink.write(frame)
            unknown += unk
            statuses += Counter(frame["status"].to_list())
            progress(f"{batch}: evidence for {sink.rows} items so far")
        sink.commit()
    except BaseException:
        sink.abort()
        raise
    if unknown:
        context.log.warning(f"{batch}: checks of unknown type kept but not used for evidence: {dict(unknown)}")
    return dg.MaterializeResult(
        metadata={
            **written(settings.root, "evidence", batch, sink.rows),
            "status": counts_md(statuses, "status", "items"),
            "unknown_check_types": md_table(["type", "checks"], sorted(unknown.items())) if unknown else "none",
        }
    )
