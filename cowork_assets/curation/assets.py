"""Dagster wiring of the curation stage: curated messages, sample stats, the evidence audit, and its checks."""

from contextlib import ExitStack

import dagster as dg
import polars as pl

from cowork_assets.curation.curate import curate_chunk
from cowork_assets.curation.report import budget_report, strategy_report, truncation_report
from cowork_assets.curation.schemas import TruncationSweep
from cowork_assets.curation.sweep import ALLOWANCES, recommendation, sweep, sweep_chart
from cowork_assets.markdown import Markdown
from cowork_assets.orchestration.lineage import column_lineage
from cowork_assets.orchestration.metadata import as_metadata, written
from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.orchestration.specs import check_results, step_check
from cowork_assets.orchestration.stages import batch_stage
from cowork_assets.runtime.progress import throttled
from cowork_assets.store.models import polars_schema
from cowork_assets.store.registry import TABLES, batch_chunks, group

# The tables the curation step writes together; truncation_sweep is its own asset.
CURATED = {name: t for name, t in group("curation").items() if name != "truncation_sweep"}


def _read(settings: CurateSettings, table: str, batch: str, columns: list[str] | None = None) -> pl.DataFrame:
    return TABLES[table].read(settings.root, batch, columns=columns)


@step_check(
    "evidence_audit",
    additional_deps=["evidence_rollup", "curated_messages"],
    description="ERROR when truncation under the configured strategy loses more than max_truncation_loss_rate of "
    "the at-risk evidence of passing teacher trajectories (default: any). Lists up to 20 lost values.",
)
def evidence_lost_to_truncation(settings: CurateSettings, b: str) -> dg.AssetCheckResult:
    passed, metadata = truncation_report(
        _read(settings, "evidence_audit", b),
        _read(settings, "evidence_rollup", b),
        _read(settings, "curated_messages", b, ["trajectory_id", "message_index", "kept_spans"]),  # not the text
        settings.max_truncation_loss_rate,
        settings,
    )
    return dg.AssetCheckResult(passed=passed, severity=dg.AssetCheckSeverity.ERROR, metadata=as_metadata(metadata, b))


@step_check(
    "sample_stats",
    additional_deps=["evidence_audit"],
    description="How many passing teacher samples the budget removes, per category, task and check type. ERROR "
    "when a category keeps less than min_category_retention of its passing samples or a task loses all of them.",
)
def evidence_lost_to_budget(settings: CurateSettings, b: str) -> dg.AssetCheckResult:
    passed, metadata = budget_report(
        _read(settings, "sample_stats", b), _read(settings, "evidence_audit", b), settings.min_category_retention
    )
    return dg.AssetCheckResult(passed=passed, severity=dg.AssetCheckSeverity.ERROR, metadata=as_metadata(metadata, b))


@step_check(
    "curated_messages",
    additional_deps=["evidence_audit", "sample_stats"],
    description="At the configured allowance: evidence items and trajectories lost under each truncation "
    "strategy, and the characters each keeps — what the choice of strategy costs. Informational.",
)
def strategy_comparison(settings: CurateSettings, b: str) -> dg.AssetCheckResult:
    metadata = strategy_report(
        _read(settings, "evidence_audit", b),
        _read(settings, "evidence_rollup", b),
        _read(settings, "sample_stats", b),
        settings,
    )
    # Informational: it never fails, and says so with the lowest severity.
    return dg.AssetCheckResult(passed=True, severity=dg.AssetCheckSeverity.WARN, metadata=as_metadata(metadata, b))


CURATION_CHECKS = [evidence_lost_to_truncation, evidence_lost_to_budget, strategy_comparison]


@batch_stage(*CURATED, checks=CURATION_CHECKS)
def curation(context: dg.AssetExecutionContext, settings: CurateSettings):
    """Truncate observations, apply the budget, and audit which evidence each step removed."""
    batch, root = context.partition_key, settings.root
    progress = throttled(context.log.info)
    with ExitStack() as stack:  # every table committed when the batch is done, or none
        sinks = {name: stack.enter_context(TABLES[name].sink(root, batch)) for name in CURATED}
        # Only a trainer's chat template renders the tool lists: the budget counts its markup.
        packages = TABLES["task_packages"]
        tools = packages.read(root, batch, columns=["task_hash", "tools"]) if settings.tokenizer else None
        for chunk in batch_chunks(root, batch, trajectories=None, evidence=None):
            frames = curate_chunk(batch, chunk["trajectories"], chunk["messages"], chunk["evidence"], settings, tools)
            for name, frame in frames.items():
                sinks[name].write(frame)
            progress(f"{batch}: curated {sinks['sample_stats'].rows} trajectories")
    for name, sink in sinks.items():
        yield dg.MaterializeResult(
            asset_key=name,
            metadata={
                **written(settings.root, name, batch, sink.rows),
                "truncation_strategy": settings.truncation_strategy,
                "max_observation_chars": settings.max_observation_chars,
                "char_budget": settings.char_budget,
                "budget_policy": settings.budget_policy,
                **column_lineage(name),
            },
        )
    yield from check_results(CURATION_CHECKS, settings, batch)


@batch_stage("truncation_sweep")
def truncation_sweep(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
    batch, root = context.partition_key, settings.root
    allowances = tuple(sorted(set(ALLOWANCES) | {settings.max_observation_chars}))
    trajectories = TABLES["trajectories"].read(root, batch, columns=["trajectory_id", "category"])
    evidence = TABLES["evidence"].read(root, batch)
    # The whole batch at once: of the messages only the observations' lengths are read (a chunk at a time,
    # the sweep would pay its fixed cost once per chunk).
    found = sweep(
        trajectories,
        TABLES["messages"].scan(root, batch),
        evidence,
        settings.evidence_context_chars,
        allowances,
    )
    found = found.with_columns(batch=pl.lit(batch)).select(polars_schema(TruncationSweep).names())
    TABLES["truncation_sweep"].write(found, root, batch)
    return dg.MaterializeResult(
        metadata=as_metadata(
            {
                **written(root, "truncation_sweep", batch, found.height),
                "lost_share": sweep_chart(found),
                "recommendation": Markdown("\n".join(f"- {line}" for line in recommendation(found))),
            }
        )
    )
