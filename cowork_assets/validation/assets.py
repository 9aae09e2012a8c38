"""Dagster wiring of the validation stage: structure_findings per batch, task_findings across batches."""

import math

import dagster as dg
import orjson
import polars as pl

from cowork_assets.markdown import EXAMPLES, table
from cowork_assets.orchestration.metadata import as_metadata, counts_md, written
from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.orchestration.specs import asset_args, check_results, step_check
from cowork_assets.orchestration.stages import batch_stage
from cowork_assets.store.models import polars_schema
from cowork_assets.store.registry import TABLES, batch_chunks
from cowork_assets.store.table import batch_groups
from cowork_assets.validation.regrade import RUN_FIELDS, UNDECIDABLE, agreement, replay_grades
from cowork_assets.validation.schemas import StructureFindings
from cowork_assets.validation.structure import find_structure_findings
from cowork_assets.validation.tasks import find_task_findings


@step_check(
    "regrade",
    description="Warns when replaying the checks disagrees with the recorded verdict on more than "
    "1 - min_grader_agreement of the compared runs (default: any), with the agreement rate and the disagreeing "
    "runs grouped by reason.",
)
def grader_agreement(settings: CurateSettings, batch: str) -> dg.AssetCheckResult:
    """(The synthetic data plants the inconsistencies that make a replay disagree: its batches say so.)"""
    found = TABLES["regrade"].read(settings.root, batch)
    result = agreement(found)
    disagreeing = sum(n for reason, n, _ in result["reasons"] if reason != UNDECIDABLE)
    tolerated = math.floor((1 - settings.min_grader_agreement) * result["compared"] + 1e-9)
    return dg.AssetCheckResult(
        passed=disagreeing <= tolerated,
        severity=dg.AssetCheckSeverity.WARN,
        metadata=as_metadata(
            {
                **({"note": PLANTED} if _synthetic(settings, batch) else {}),  # first: the summary shows 4 lines
                "compared_runs": result["compared"],
                "agreeing_runs": result["agree"],
                "disagreements_tolerated": tolerated,
                "agreement_rate": round(result["rate"], 4) if result["rate"] is not None else "—",
                "by_reason": table(
                    ["disagreement", "runs", "examples"],
                    [(r, n, ", ".join(ex)) for r, n, ex in result["reasons"]] or [("(none)", 0, "—")],
                ),
            },
            batch,
        ),
    )


@step_check(
    "structure_findings",
    additional_deps=["trajectories"],
    description="Warns when samples of the batch have structural errors (they are excluded from SFT).",
)
def samples_structurally_valid(settings: CurateSettings, b: str) -> dg.AssetCheckResult:
    root = settings.root
    found = TABLES["structure_findings"].read(root, b).filter(pl.col("severity") == "error")
    total = TABLES["trajectories"].rows(root, b)
    invalid = found["trajectory_id"].n_unique()
    return dg.AssetCheckResult(
        passed=invalid == 0,
        severity=dg.AssetCheckSeverity.WARN,
        metadata=as_metadata(
            {
                "samples": total,
                "invalid_samples": invalid,
                "invalid_rate": round(invalid / total, 4) if total else 0.0,
                "by_kind": table(
                    ["kind", "findings", "samples"],
                    found.group_by("kind").agg(pl.len(), pl.col("trajectory_id").n_unique()).sort("kind").rows(),
                ),
                "examples": table(
                    ["trajectory", "message", "kind", "detail"],
                    found.head(EXAMPLES).select("trajectory_id", "message_index", "kind", "detail").rows(),
                    found.height,
                ),
            },
            b,
        ),
    )


@step_check(
    "task_findings",
    description="Warns when task packages have consistency errors "
    "(those tasks are excluded from RL, their runs from SFT).",
)
def tasks_consistent(settings: CurateSettings) -> dg.AssetCheckResult:
    found = TABLES["task_findings"].read(settings.root).filter(pl.col("severity") == "error")
    return dg.AssetCheckResult(
        passed=found.is_empty(),
        severity=dg.AssetCheckSeverity.WARN,
        metadata=as_metadata(
            {
                "tasks_with_errors": found["task_id"].n_unique(),
                "by_kind": table(
                    ["kind", "findings", "tasks"],
                    found.group_by("kind").agg(pl.len(), pl.col("task_id").n_unique()).sort("kind").rows(),
                ),
                "examples": table(
                    ["task", "trajectory", "kind", "detail", "suggestion"],
                    found.head(EXAMPLES).select("task_id", "trajectory_id", "kind", "detail", "suggestion").rows(),
                    found.height,
                ),
            }
        ),
    )


@batch_stage("structure_findings", checks=[samples_structurally_valid])
def structure_findings(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
    b, root = context.partition_key, settings.root
    packages = TABLES["task_packages"].read(root, b, columns=["task_hash", "tools"])
    calls = ["trajectory_id", "message_index", "call_id", "tool_name", "arguments", "observation_index"]
    frames = []  # a chunk of whole trajectories at a time: memory does not grow with the batch
    for chunk in batch_chunks(root, b, trajectories=["trajectory_id", "task_hash", "category"], tool_calls=calls):
        runs = chunk["trajectories"]
        tasks = packages.filter(pl.col("task_hash").is_in(runs["task_hash"].unique().implode()))
        frames.append(
            find_structure_findings(b, runs, tasks, chunk["messages"], chunk["tool_calls"], settings.token_encoding)
        )
    found = (
        pl.concat(frames).sort("trajectory_id", "message_index", "kind", nulls_last=True)
        if frames
        else pl.DataFrame(schema=polars_schema(StructureFindings))
    )
    TABLES["structure_findings"].write(found, root, b)
    return dg.MaterializeResult(
        metadata={
            **written(root, "structure_findings", b, found.height),
            "by_kind": counts_md(dict(found.group_by("kind").len().iter_rows()), "kind", "findings"),
        },
        check_results=check_results([samples_structurally_valid], settings, b),
    )


@dg.asset(**asset_args("task_findings"), check_specs=[tasks_consistent.spec])
def task_findings(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
    root = settings.root
    packages = TABLES["task_packages"].first_copies(root, "task_hash")
    runs = TABLES["trajectories"].scan(root).select("batch").collect().sort("batch", maintain_order=True)
    scan = lambda table, group: TABLES[table].scan_batches_of(root, group)  # noqa: E731
    found = find_task_findings(
        packages, ((scan("trajectories", g), scan("tool_calls", g), scan("regrade", g)) for g in batch_groups(runs))
    )
    path = TABLES["task_findings"].write(found, root)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": found.height,
            "path": dg.MetadataValue.path(str(path)),
            "by_kind": counts_md(dict(found.group_by("kind").len().iter_rows()), "kind", "findings"),
        },
        check_results=check_results([tasks_consistent], settings),
    )


PLANTED = (
    "planted: the synthetic generator writes task packages whose checks disagree with their runs on purpose (its "
    "manifest.json's count_mismatch and duplicate_creations rates), so this warning is expected on its data"
)


def _synthetic(settings: CurateSettings, batch: str) -> bool:
    """Whether the batch is the synthetic generator's: its manifest.json at the raw root names it."""
    try:
        made = orjson.loads((settings.raw_path / "manifest.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    return isinstance(made, dict) and "rates" in made and batch in (made.get("batches") or {})


@batch_stage("regrade", checks=[grader_agreement])
def regrade(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
    b, root = context.partition_key, settings.root
    packages = TABLES["task_packages"].read(root, b, columns=["task_hash", "category", "checks"])
    chunks = batch_chunks(root, b, trajectories=list(RUN_FIELDS))
    found = replay_grades(b, ((chunk["trajectories"], chunk["messages"]) for chunk in chunks), packages)
    TABLES["regrade"].write(found, root, b)
    return dg.MaterializeResult(
        metadata={
            **written(root, "regrade", b, found.height),
            "by_disagreement": counts_md(
                dict(found.group_by("disagreement").len().drop_nulls().iter_rows()), "disagreement", "runs"
            ),
        },
        check_results=check_results([grader_agreement], settings, b),
    )
