"""Dagster wiring of the curation stage: curated messages, sample stats, the evidence audit, and its checks."""

import dagster as dg
import polars as pl

from cowork_assets.curation.curate import CurationParams, curate_chunk
from cowork_assets.curation.report import budget_report, strategy_report, truncation_report
from cowork_assets.curation.schemas import CuratedMessages, EvidenceAudit, EvidenceRollup, SampleStats, TruncationSweep
from cowork_assets.curation.sweep import ALLOWANCES, recommendation, sweep, sweep_chart
from cowork_assets.ingest.schemas import arrow_schema, polars_schema
from cowork_assets.lineage import column_lineage
from cowork_assets.markdown import Markdown
from cowork_assets.metadata import as_metadata, column_schema
from cowork_assets.partitions import batches
from cowork_assets.progress import throttled
from cowork_assets.settings import CurateSettings
from cowork_assets.storage import ParquetSink, iter_trajectory_chunks, partition_file, write_parquet_atomic

TABLES = {
    "curated_messages": (CuratedMessages, "Every message after observation truncation and the sample budget, with "
                         "its original and kept length and the kept spans: what a trainer would see."),
    "sample_stats": (SampleStats, "Per trajectory: characters and tokens before and after curation, characters "
                     "under each truncation strategy, and the budget's verdict (kept / trimmed / dropped) and reason."),
    "evidence_audit": (EvidenceAudit, "Per evidence item: lost to truncation (under head, under evidence_aware, "
                       "under the configured strategy) and lost to the budget."),
    "evidence_rollup": (EvidenceRollup, "Per trajectory: evidence items, at-risk items, and how many were lost "
                        "to truncation and to the budget."),
}


def params(settings: CurateSettings) -> CurationParams:
    return CurationParams(
        strategy=settings.truncation_strategy, allowance=settings.max_observation_chars,
        context=settings.evidence_context_chars, char_budget=settings.char_budget,
        token_budget=settings.token_budget, policy=settings.budget_policy,
        encoding=settings.token_encoding,
    )


@dg.multi_asset(
    specs=[
        dg.AssetSpec(name, group_name="curation", description=description, kinds={"parquet", "polars"},
                     deps=["messages", "trajectories", "evidence"],
                     metadata={"dagster/column_schema": column_schema(model)})
        for name, (model, description) in TABLES.items()
    ],
    partitions_def=batches,
    can_subset=False,
)
def curation(context: dg.AssetExecutionContext, settings: CurateSettings):
    """Truncate observations, apply the budget, and audit which evidence each step removed."""
    batch, root, p = context.partition_key, settings.root, params(settings)
    trajectories = pl.read_parquet(partition_file(root, "trajectories", batch))
    evidence = pl.read_parquet(partition_file(root, "evidence", batch))
    sinks = {name: ParquetSink(partition_file(root, name, batch), arrow_schema(model))
             for name, (model, _) in TABLES.items()}
    progress = throttled(context.log.info)
    try:
        for messages in iter_trajectory_chunks(partition_file(root, "messages", batch)):
            ids = messages["trajectory_id"].unique().to_list()
            frames = curate_chunk(batch, trajectories.filter(pl.col("trajectory_id").is_in(ids)), messages,
                                  evidence.filter(pl.col("trajectory_id").is_in(ids)), p)
            for name, frame in frames.items():
                sinks[name].write(frame)
            progress(f"{batch}: curated {sinks['sample_stats'].rows} trajectories")
        for sink in sinks.values():
            sink.commit()
    except BaseException:
        for sink in sinks.values():
            sink.abort()
        raise
    context.log.info(f"{batch}: strategy={p.strategy} allowance={p.allowance} budget={p.char_budget} ({p.policy})")
    for name, sink in sinks.items():
        yield dg.MaterializeResult(asset_key=name, metadata={
            "dagster/row_count": sink.rows, "path": dg.MetadataValue.path(str(sink.final)),
            "truncation_strategy": p.strategy, "max_observation_chars": p.allowance, **column_lineage(name),
        })


@dg.asset(
    group_name="curation", partitions_def=batches, deps=["messages", "trajectories", "evidence"],
    kinds={"parquet", "polars"}, metadata={"dagster/column_schema": column_schema(TruncationSweep)},
    description="At-risk evidence lost per truncation strategy (head, tail, middle: verl's rollout-time sides; "
    "and evidence_aware) at allowances from 250 to 16,000 characters, per category: which allowance and side "
    "keep the evidence the graders depend on.",
)
def truncation_sweep(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
    batch, root = context.partition_key, settings.root
    allowances = tuple(sorted(set(ALLOWANCES) | {settings.max_observation_chars}))
    trajectories = pl.read_parquet(partition_file(root, "trajectories", batch), columns=["trajectory_id", "category"])
    evidence = pl.read_parquet(partition_file(root, "evidence", batch))
    frames = []  # a chunk of whole trajectories at a time, summed at the end
    for messages in iter_trajectory_chunks(partition_file(root, "messages", batch),
                                           ["trajectory_id", "message_index", "role", "content"]):
        ids = messages["trajectory_id"].unique()
        frames.append(sweep(trajectories.filter(pl.col("trajectory_id").is_in(ids)), messages,
                            evidence.filter(pl.col("trajectory_id").is_in(ids)), settings.evidence_context_chars,
                            allowances))
    keys = ["category", "strategy", "max_observation_chars"]
    found = (pl.concat(frames).group_by(keys).agg(pl.exclude(keys).sum()).sort(keys) if frames
             else pl.DataFrame(schema=polars_schema(TruncationSweep)).drop("batch"))
    found = found.with_columns(batch=pl.lit(batch)).select(polars_schema(TruncationSweep).names())
    path = write_parquet_atomic(found, partition_file(root, "truncation_sweep", batch), arrow_schema(TruncationSweep))
    return dg.MaterializeResult(metadata=as_metadata({
        "dagster/row_count": found.height, "path": dg.MetadataValue.path(str(path)),
        "lost_share": sweep_chart(found), "recommendation": Markdown("\n".join(f"- {line}" for line in recommendation(found)))}))


def _read(settings: CurateSettings, table: str, batch: str, columns: list[str] | None = None) -> pl.DataFrame:
    return pl.read_parquet(partition_file(settings.root, table, batch), columns=columns)


@dg.asset_check(
    asset="evidence_audit", partitions_def=batches, additional_deps=["evidence_rollup", "curated_messages"],
    description="ERROR when truncation under the configured strategy loses more than max_truncation_loss_rate of "
    "the at-risk evidence of passing teacher trajectories (default: any). Lists up to 20 lost values.",
)
def evidence_lost_to_truncation(context: dg.AssetCheckExecutionContext, settings: CurateSettings):
    b = context.partition_key
    passed, metadata = truncation_report(
        _read(settings, "evidence_audit", b), _read(settings, "evidence_rollup", b),
        _read(settings, "curated_messages", b, ["trajectory_id", "message_index", "kept_spans"]),  # not the text
        settings.max_truncation_loss_rate, params(settings))
    return dg.AssetCheckResult(passed=passed, severity=dg.AssetCheckSeverity.ERROR, metadata=as_metadata(metadata, b))


@dg.asset_check(
    asset="sample_stats", partitions_def=batches, additional_deps=["evidence_audit"],
    description="How many passing teacher samples the budget removes, per category, task and check type. ERROR "
    "when a category keeps less than min_category_retention of its passing samples or a task loses all of them.",
)
def evidence_lost_to_budget(context: dg.AssetCheckExecutionContext, settings: CurateSettings):
    b = context.partition_key
    passed, metadata = budget_report(_read(settings, "sample_stats", b), _read(settings, "evidence_audit", b),
                                     settings.min_category_retention)
    return dg.AssetCheckResult(passed=passed, severity=dg.AssetCheckSeverity.ERROR, metadata=as_metadata(metadata, b))


@dg.asset_check(
    asset="curated_messages", partitions_def=batches, additional_deps=["evidence_audit", "sample_stats"],
    description="At the configured allowance: evidence items and trajectories lost under head versus "
    "evidence_aware, and the characters each keeps — what the choice of strategy costs. Informational.",
)
def strategy_comparison(context: dg.AssetCheckExecutionContext, settings: CurateSettings):
    b = context.partition_key
    metadata = strategy_report(_read(settings, "evidence_audit", b), _read(settings, "evidence_rollup", b),
                               _read(settings, "sample_stats", b), params(settings))
    return dg.AssetCheckResult(passed=True, metadata=as_metadata(metadata, b))


curation_checks = [evidence_lost_to_truncation, evidence_lost_to_budget, strategy_comparison]
