"""Dagster wiring of the selection stage: dedup signatures per batch, clusters and exclusions across batches."""

import dagster as dg
import polars as pl

from cowork_assets.curation.redact import checked_secrets
from cowork_assets.curation.secrets import Detector
from cowork_assets.markdown import EXAMPLES, table
from cowork_assets.orchestration.metadata import as_metadata, written
from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.orchestration.specs import asset_args, check_results, step_check
from cowork_assets.selection.dedup import clusters
from cowork_assets.selection.exclusions import find_exclusions, first_batch_rows
from cowork_assets.selection.holdout import corpus_held_out
from cowork_assets.selection.signatures import signatures
from cowork_assets.store.registry import TABLES


@dg.asset(**asset_args("dedup_signatures"))
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


@dg.asset(**asset_args("dedup_clusters"), check_specs=[duplicate_rate.spec])
def dedup_clusters(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
    scan = TABLES["dedup_signatures"].scan(settings.root)
    # A repeated id is excluded as such, not clustered: only its first batch's row is read. Chosen on the two
    # id columns: choosing on every signature held them twice.
    first = first_batch_rows(scan.select("trajectory_id", "batch").collect())
    sigs = (
        scan.select("trajectory_id", "batch", "task_id", "content_hash", "shingles", "minhash", "score", "chars")
        .join(first.lazy(), on=["trajectory_id", "batch"], how="semi")
        .collect()
    )
    found = clusters(sigs, settings.near_dup_threshold)
    path = TABLES["dedup_clusters"].write(found, settings.root)
    removed = found.filter(~pl.col("kept")).height
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": found.height,
            "path": dg.MetadataValue.path(str(path)),
            "teacher_runs": sigs.height,
            "clusters": found["cluster_id"].n_unique(),
            "duplicates_removed": removed,
            "near_dup_threshold": settings.near_dup_threshold,
        },
        check_results=check_results([duplicate_rate], settings),
    )


@dg.asset(**asset_args("exclusions"))
def exclusions(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
    root = settings.root
    read = lambda t, cols=None: TABLES[t].scan(root).select(cols or pl.all()).collect()  # noqa: E731
    trajectories = read(
        "trajectories", ["batch", "trajectory_id", "task_id", "teacher_role", "grade_passed", "grade_score"]
    )
    held = corpus_held_out(root, settings.holdout, settings.holdout_overlap)
    secret_checks = None
    if settings.redact_secrets:  # one package per task, a batch's at a time: every batch's copies would be GBs
        detector = Detector(tuple(settings.secret_allowlist))
        per_batch = [checked_secrets(p, detector) for p in TABLES["task_packages"].first_copies(root, "task_id")]
        secret_checks = pl.concat(per_batch).unique("task_id") if per_batch else None
    found = find_exclusions(
        trajectories,
        read("structure_findings"),
        TABLES["task_findings"].read(root),
        read("evidence_rollup", ["batch", "trajectory_id", "lost_to_truncation", "redacted_evidence"]),
        read("sample_stats", ["batch", "trajectory_id", "verdict", "reason", "chars_after"]),
        TABLES["dedup_clusters"].read(root),
        settings.max_per_task,
        settings.lost_evidence_policy,
        settings.accept_ungraded,
        held,
        secret_checks,
    )
    path = TABLES["exclusions"].write(found, root)
    sft = found.filter(pl.col("dataset") == "sft")
    selected = trajectories.join(
        sft.select("batch", "trajectory_id").unique(), on=["batch", "trajectory_id"], how="anti"
    ).height
    first = sft.group_by("trajectory_id", maintain_order=True).agg(pl.col("criterion").first())
    return dg.MaterializeResult(
        metadata=as_metadata(
            {
                "dagster/row_count": found.height,
                "path": dg.MetadataValue.path(str(path)),
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
