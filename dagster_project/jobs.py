"""Jobs: everything per batch (one partition per run), then everything that looks across batches."""

import dagster as dg

from cowork_assets.curation.assets import curation, truncation_sweep
from cowork_assets.datasets.assets import dataset_assets
from cowork_assets.evidence.assets import evidence
from cowork_assets.ingest.assets import staging_tables
from cowork_assets.orchestration.assets import batch_manifest
from cowork_assets.orchestration.partitions import ALL_BUCKETS
from cowork_assets.orchestration.stages import one_step
from cowork_assets.selection.assets import dedup_clusters, dedup_signatures, exclusions
from cowork_assets.validation.assets import regrade, structure_findings, task_findings
from cowork_assets.warehouse.assets import SAMPLE_ID, trace_config, trace_sample_op, warehouse

# A batch run's stages, in order, as one step (orchestration/stages.py): a step's fixed cost is paid once per run.
BATCH_STAGES = (
    staging_tables,
    evidence,
    curation,
    truncation_sweep,
    structure_findings,
    regrade,
    dedup_signatures,
    batch_manifest,
)
batch_stages = one_step(
    "batch_stages",
    BATCH_STAGES,
    "A batch's stages in one step: ingest -> evidence -> curation -> truncation sweep -> structure findings -> "
    "re-grade -> dedup signatures -> the batch's manifest.",
)
PER_BATCH = [batch_stages]
CROSS_BATCH = [task_findings, dedup_clusters, exclusions, *dataset_assets]
WAREHOUSE = [warehouse]
# Cross-batch runs rewrite shared tables and publications: the run queue lets one run at a time.
CROSS_BATCH_TAG = {"cowork/stage": "cross-batch"}

process_batch = dg.define_asset_job(
    "process_batch",
    selection=dg.AssetSelection.assets(*PER_BATCH),
    description="Everything per batch, for one batch partition: ingest -> evidence -> curation -> validation "
    "-> dedup signatures -> the batch's manifest.",
)

refresh_corpus = dg.define_asset_job(
    "refresh_corpus",
    selection=dg.AssetSelection.assets(*CROSS_BATCH),
    tags=CROSS_BATCH_TAG | ALL_BUCKETS,
    description="Everything across batches: task findings, dedup clusters and exclusions (every task bucket, one "
    "at a time), the gated datasets and their publication.",
)

refresh_warehouse = dg.define_asset_job(
    "refresh_warehouse",
    selection=dg.AssetSelection.assets(*WAREHOUSE),
    tags=CROSS_BATCH_TAG,
    description="Rebuild the DuckDB file; a run of its own, so a failed gate upstream never leaves stale views.",
)

# What the hold-back watches for, however a run was launched (a job, or "Materialize" of some of these assets).
BATCH_ASSETS = frozenset(k.to_user_string() for a in PER_BATCH for k in a.keys)
CROSS_BATCH_ASSETS = frozenset(k.to_user_string() for a in (*CROSS_BATCH, *WAREHOUSE) for k in a.keys)

# Jobs the CLI runs in order after the batches: the cross-batch ones, then the warehouse (even when a cross-batch
# step failed); the sensors wait while any of them is in flight.
BATCH_JOB = process_batch.name
CORPUS_JOBS = (refresh_corpus.name, refresh_warehouse.name)


def trace_sample_job(settings) -> dg.JobDefinition:
    """The trace job, its settings fixed to the code location's: its launchpad asks for the sample id only, and
    refuses an empty one or one that names nothing (`trace_config`) before any run starts."""

    @dg.job(
        description="The path from a sample to its raw line: launch it with the sample id in its config "
        "(`sample_id: ...`) and read the trace, the raw line included, in the run's log. "
        "The same as `cowork-curate trace <id>`.",
        resource_defs={"settings": dg.ResourceDefinition.hardcoded_resource(settings)},
        config=dg.ConfigMapping(
            config_fn=lambda config: trace_config(settings, config["sample_id"]),
            config_schema={"sample_id": dg.Field(str, description=SAMPLE_ID)},
        ),
    )
    def trace_sample():
        trace_sample_op()

    return trace_sample
