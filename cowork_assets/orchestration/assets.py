"""The last stage of a batch run: the batch's manifest (orchestration/verdict.py), written once every per-batch table
is."""

import dagster as dg

from cowork_assets.orchestration import verdict
from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.orchestration.stages import batch_stage
from cowork_assets.store.registry import REGISTRY

PER_BATCH_TABLES = [t.name for t in REGISTRY if t.per_batch and t.location == "tables"]


MANIFEST = dg.AssetSpec(
    verdict.MANIFEST,
    group_name="batches",
    deps=PER_BATCH_TABLES,
    kinds={"json"},
    description="The batch as processed: its raw files' fingerprint when ingest read them, the settings and code it "
    "ran with, each per-batch table's file with its size and sha256, and its verdict: each check its run evaluated, "
    "with its result and severity, and the instance it ran on (<data_root>/state/manifests/<batch>.json). A batch "
    "counts as processed only while its manifest verifies; publication judges every batch by its manifest.",
)


@batch_stage(specs=[MANIFEST])
def batch_manifest(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
    # the batch's checks were evaluated by the stages before, in this step
    written = verdict.finish(context.instance, settings, context.partition_key, context.run.run_id)
    return dg.MaterializeResult(
        metadata={
            "tables": len(written["tables"]),
            "bytes": sum(t["bytes"] for t in written["tables"].values()),
            "data_root": dg.MetadataValue.path(settings.root),
        }
    )
