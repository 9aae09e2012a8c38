"""Dagster wiring of the evidence stage."""

from collections import Counter

import dagster as dg
import polars as pl

from cowork_assets.evidence.build import build_evidence
from cowork_assets.orchestration.metadata import counts_md, md_table, written
from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.orchestration.stages import batch_stage
from cowork_assets.runtime.progress import throttled
from cowork_assets.store.registry import TABLES, batch_chunks

CALL_COLUMNS = ["trajectory_id", "message_index", "tool_name", "arguments"]


@batch_stage("evidence")
def evidence(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
    batch, root = context.partition_key, settings.root
    packages = TABLES["task_packages"].read(root, batch, columns=["task_hash", "checks", "tools"])
    unknown: Counter = Counter()
    statuses: Counter = Counter()
    progress = throttled(context.log.info)
    sides = {"trajectories": ["trajectory_id", "task_hash"], "tool_calls": CALL_COLUMNS}
    with TABLES["evidence"].sink(root, batch) as sink:
        for chunk in batch_chunks(root, batch, **sides):
            runs = chunk["trajectories"]
            tasks = packages.filter(pl.col("task_hash").is_in(runs["task_hash"].unique().implode()))
            frame, unk = build_evidence(batch, runs, tasks, chunk["tool_calls"], chunk["messages"])
            sink.write(frame)
            unknown += unk
            statuses += Counter(frame["status"].to_list())
            progress(f"{batch}: evidence for {sink.rows} items so far")
    if unknown:
        context.log.warning(f"{batch}: checks of unknown type kept but not used for evidence: {dict(unknown)}")
    return dg.MaterializeResult(
        metadata={
            **written(settings.root, "evidence", batch, sink.rows),
            "status": counts_md(statuses, "status", "items"),
            "unknown_check_types": md_table(["type", "checks"], sorted(unknown.items())) if unknown else "none",
        }
    )
