"""Sensors: new raw batch folders become partitions and get their per-batch run."""

import dagster as dg

from cowork_assets.ingest.raw_files import discover_batches
from cowork_assets.partitions import batches
from cowork_assets.settings import CurateSettings
from dagster_project.jobs import process_batch


@dg.sensor(
    job=process_batch,
    minimum_interval_seconds=30,
    description="Registers each new batch folder under raw_root as a partition and requests its process_batch run.",
)
def new_batch_sensor(context: dg.SensorEvaluationContext, settings: CurateSettings):
    try:
        found = discover_batches(settings.raw_path)
    except FileNotFoundError as exc:
        return dg.SkipReason(str(exc))
    known = set(context.instance.get_dynamic_partitions(batches.name))
    new = [b for b in found if b not in known]
    if not new:
        return dg.SkipReason(f"no new batch folders under {settings.raw_path}")
    return dg.SensorResult(
        run_requests=[dg.RunRequest(partition_key=b, run_key=f"process:{b}") for b in new],
        dynamic_partitions_requests=[batches.build_add_request(new)],
    )
