"""Jobs: the per-batch pipeline (one partition per run) and the cross-batch refresh."""

import dagster as dg

PER_BATCH_GROUPS = ("staging", "evidence", "curation")
CROSS_BATCH_GROUPS = ("warehouse",)

process_batch = dg.define_asset_job(
    "process_batch",
    selection=dg.AssetSelection.groups(*PER_BATCH_GROUPS),
    description="Everything that is per batch: ingest -> evidence -> curation, for one batch partition.",
)

refresh_corpus = dg.define_asset_job(
    "refresh_corpus",
    selection=dg.AssetSelection.groups(*CROSS_BATCH_GROUPS),
    description="Everything that looks across batches (for now, the DuckDB warehouse file).",
)
