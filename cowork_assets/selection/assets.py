"""Dagster wiring of the selection stage: dedup signatures per batch, clusters and exclusions across batches."""

import dagster as dg
import polars as pl
import pyarrow as pa

from cowork_assets.curation.redact import checked_secrets
from cowork_assets.curation.secrets import Detector
from cowork_assets.markdown import EXAMPLES, table
from cowork_assets.orchestration import verdict
from cowork_assets.orchestration.metadata import as_metadata, written
from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.orchestration.specs import asset_args, check_results, step_check
from cowork_assets.orchestration.stages import batch_stage
from cowork_assets.runtime.progress import throttled
from cowork_assets.selection.dedup import clusters
from cowork_assets.selection.exclusions import exclusions_by_bucket, first_batch_rows
from cowork_assets.selection.holdout import corpus_held_out
from cowork_assets.selection.preference import prompt_keys
from cowork_assets.selection.schemas import DedupSignatures
from cowork_assets.selection.signatures import signatures
from cowork_assets.store.buckets import bucket_groups, split_by_bucket, task_buckets
from cowork_assets.store.models import arrow_schema
from cowork_assets.store.registry import TABLES
from cowork_assets.store.storage import PartSpill
from cowork_assets.store.table import batch_groups


@batch_stage("dedup_signatures")
def dedup_signatures(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
    b, root = context.partition_key, settings.root
    teachers = (
        TABLES["trajectories"]
        .read(root, b, columns=["trajectory_id", "task_id", "teacher_role", "grade_score"])
        .filter(pl.col("teacher_role") == "teacher")
    )
    chars = TABLES["sample_stats"].read(root, b, columns=["trajectory_id", "chars_after"])
    info = teachers.join(chars, on="trajectory_id").select(
        "trajectory_id", "task_id", score="grade_score", chars="chars_after"
    )
    with TABLES["dedup_signatures"].sink(root, b) as sink:
        for messages in TABLES["curated_messages"].chunks(root, b):
            chunk = messages.filter(pl.col("trajectory_id").is_in(info["trajectory_id"].to_list()))
            if chunk.height:
                sink.write(signatures(chunk).join(info, on="trajectory_id").with_columns(batch=pl.lit(b)))
    return dg.MaterializeResult(metadata=written(root, "dedup_signatures", b, sink.rows))


@step_check(
    "dedup_clusters",
    description="Warns when more than max_duplicate_rate of teacher runs are duplicates; lists the largest clusters.",
)
def duplicate_rate(settings: CurateSettings) -> dg.AssetCheckResult:
    found = TABLES["dedup_clusters"].read(settings.root)
    runs = TABLES["dedup_signatures"].rows(settings.root)
    removed = found.filter(~pl.col("kept"))
    rate = removed.height / runs if runs else 0.0
    largest = (
        found.group_by("cluster_id", "task_id")
        .agg(members=pl.len(), kinds=pl.col("kind").unique().sort().str.join(", "))
        .sort("members", "cluster_id", descending=[True, False])
    )
    return dg.AssetCheckResult(
        passed=rate <= settings.max_duplicate_rate,
        severity=dg.AssetCheckSeverity.WARN,
        metadata=as_metadata(
            {
                "teacher_runs": runs,
                "duplicates_removed": removed.height,
                "exact": removed.filter(pl.col("kind") == "exact").height,
                "near": removed.filter(pl.col("kind") == "near").height,
                "duplicate_rate": round(rate, 4),
                "max_duplicate_rate": settings.max_duplicate_rate,
                "examples": table(
                    ["cluster", "task", "members", "kinds"], largest.head(EXAMPLES).rows(), largest.height
                ),
            }
        ),
    )


SIGNATURE_COLUMNS = ["trajectory_id", "batch", "task_id", "content_hash", "shingles", "minhash", "score", "chars"]


@dg.asset(**asset_args("dedup_clusters"), check_specs=[duplicate_rate.spec])
def dedup_clusters(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
    root, buckets, corpus = settings.root, context.partition_keys, verdict.corpus_version(settings)
    signatures = TABLES["dedup_signatures"]
    # A repeated id is excluded as such, not clustered: only its first batch's row is read (chosen on the id
    # columns of every batch: choosing on every signature held them twice).
    first = first_batch_rows(signatures.scan(root).select("trajectory_id", "batch", "task_id").collect())
    first = first.with_columns(task_buckets(first["task_id"])).filter(pl.col("bucket").is_in(buckets))
    schema = pa.schema([arrow_schema(DedupSignatures).field(c) for c in SIGNATURE_COLUMNS])
    # Every batch's signatures, a group of batches at a time, spilled by task bucket; then clustered a group of
    # buckets at a time.
    groups = bucket_groups(buckets, first["bucket"])
    with PartSpill(signatures.folder(root), schema, "bucket") as spill:
        for ids in batch_groups(first.drop("task_id")):
            rows = signatures.scan_batches_of(root, ids).select(SIGNATURE_COLUMNS)
            spill.write(rows.join(ids.lazy(), on=["batch", "trajectory_id"]).collect())
        runs = clustered = removed = 0
        progress = throttled(context.log.info)
        for i, group in enumerate(groups, 1):
            sigs = pl.concat([spill.take(bucket) for bucket in group])
            found = clusters(sigs, settings.near_dup_threshold)
            for bucket, part in split_by_bucket(found, group):
                TABLES["dedup_clusters"].write(part, root, bucket, corpus)
            runs, clustered = runs + sigs.height, clustered + found["cluster_id"].n_unique()
            removed += found.filter(~pl.col("kept")).height
            progress(f"task buckets {', '.join(group)} ({i}/{len(groups)}): {sigs.height} teacher runs clustered")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": TABLES["dedup_clusters"].rows(root),
            "path": dg.MetadataValue.path(TABLES["dedup_clusters"].folder(root)),
            "task_buckets": len(buckets),
            "teacher_runs": runs,
            "clusters": clustered,
            "duplicates_removed": removed,
            "near_dup_threshold": settings.near_dup_threshold,
        },
        check_results=check_results([duplicate_rate], settings),
    )


@dg.asset(**asset_args("exclusions"))
def exclusions(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
    root, buckets, corpus = settings.root, context.partition_keys, verdict.corpus_version(settings)
    read = lambda t, cols=None: TABLES[t].scan(root).select(cols or pl.all()).collect()  # noqa: E731
    run = ["batch", "trajectory_id"]
    stats = read("sample_stats", ["batch", "trajectory_id", "verdict", "reason", "chars_after"])
    trajectories = (  # with what preference pairing reads: each run's prompt and size
        read("trajectories", [*run, "task_id", "teacher_role", "grade_passed", "grade_score"])
        .join(prompt_keys(TABLES["messages"].scan(root)).collect(), on=run, how="left")
        .join(stats.select(*run, chars="chars_after"), on=run, how="left")
    )
    held = corpus_held_out(root, settings.holdout, settings.holdout_overlap, corpus)
    secret_checks = None
    if settings.redact_secrets:  # one package per task, a group of batches' at a time: every copy would be GBs
        detector = Detector(tuple(settings.secret_allowlist))
        per_batch = [checked_secrets(p, detector) for p in TABLES["task_packages"].first_copies(root, "task_id")]
        secret_checks = pl.concat(per_batch).unique("task_id") if per_batch else None
    parts = exclusions_by_bucket(
        buckets,
        lambda group: TABLES["dedup_clusters"].read_current(root, corpus, group),
        trajectories,
        read("structure_findings"),
        TABLES["task_findings"].read(root),
        read("evidence_rollup", ["batch", "trajectory_id", "lost_to_truncation", "redacted_evidence"]),
        stats,
        held,
        secret_checks,
        max_per_task=settings.max_per_task,
        lost_evidence_policy=settings.lost_evidence_policy,
        accept_ungraded=settings.accept_ungraded,
        refused=verdict.corpus_now(context.instance, settings, deep=False).held_back,
        untrusted=read("regrade", [*run, "grade_untrusted"]).filter(pl.col("grade_untrusted").is_not_null()),
        preference_margin=settings.preference_margin,
        preference_max_per_task=settings.preference_max_per_task,
    )
    progress = throttled(context.log.info)
    for i, (bucket, found) in enumerate(parts, 1):
        TABLES["exclusions"].write(found, root, bucket, corpus)
        progress(f"task bucket {bucket} ({i}/{len(buckets)}): {found.height} exclusion rows")
    found = TABLES["exclusions"].read(root)  # every bucket's, not only this run's: the metadata describes the table
    sft = found.filter(pl.col("dataset") == "sft")
    selected = trajectories.join(
        sft.select("batch", "trajectory_id").unique(), on=["batch", "trajectory_id"], how="anti"
    ).height
    first = sft.group_by("trajectory_id", maintain_order=True).agg(pl.col("criterion").first())
    return dg.MaterializeResult(
        metadata=as_metadata(
            {
                "dagster/row_count": found.height,
                "path": dg.MetadataValue.path(TABLES["exclusions"].folder(root)),
                "task_buckets": len(buckets),
                "trajectories": trajectories.height,
                "selected_for_sft": selected,
                "tasks_excluded_from_rl": found.filter(pl.col("dataset") == "rl_tasks")["task_id"].n_unique(),
                "held_out_tasks": table(
                    ["reason", "tasks"], held.group_by("reason").len().sort("reason").rows(), held.height
                ),
                "excluded_by_first_criterion": table(
                    ["criterion", "trajectories"], first.group_by("criterion").len().sort("criterion").rows()
                ),
            }
        )
    )
