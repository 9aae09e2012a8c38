"""Dagster wiring of the ingest stage: raw batches -> staging tables, their checks, and the sensor."""

import time

import dagster as dg

from cowork_assets.ingest.batch import BATCH_TABLES, accounted, ingest_batch
from cowork_assets.ingest.formats import recount_batch, registry
from cowork_assets.markdown import EXAMPLES, table
from cowork_assets.orchestration import verdict
from cowork_assets.orchestration.metadata import as_metadata, counts_md, md_table, written
from cowork_assets.orchestration.partitions import batches
from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.orchestration.specs import StepCheck, check_results, step_check
from cowork_assets.orchestration.stages import batch_stage
from cowork_assets.runtime.progress import throttled
from cowork_assets.store.models import validate_table
from cowork_assets.store.registry import TABLES, group

raw_batches = dg.AssetSpec(
    "raw_batches",
    group_name="raw",
    partitions_def=batches,
    description="Raw trajectories: one folder per batch under raw_root, laid out as the tools wrote them (sub-folders "
    "read), each file in one of the input formats ("
    + ", ".join(m.NAME for m in registry().values() if not getattr(m, "AUXILIARY", False))
    + "; docs/ingest.md). Registered as partitions by the `new_batch_sensor`.",
    kinds={"file"},
)


def count_raw_records(settings: CurateSettings, batch: str) -> int:
    """The batch's raw records by the independent recount (ingest/recount.py): each file a format reads, counted by
    that format's own rule (its `RECORDS`); files ingest listed in skipped_inputs are accounted for there."""
    return recount_batch(settings.raw_path, batch, settings.max_record_bytes)


@step_check(
    "trajectories",
    additional_deps=["quarantine"],
    description="Every raw record is accounted for: raw records, recounted from the files by a reader that shares "
    "no code with ingest's readers (ingest/recount.py, by each format's record rule), = records parsed + records "
    "quarantined.",
)
def records_accounted_for(settings: CurateSettings, batch: str) -> dg.AssetCheckResult:
    raw = count_raw_records(settings, batch)
    parsed, quarantined = accounted(settings.root, batch)
    return dg.AssetCheckResult(
        passed=raw == parsed + quarantined,
        metadata=as_metadata(
            {
                "raw_records": raw,
                "parsed": parsed,
                "quarantined": quarantined,
                "unaccounted": raw - parsed - quarantined,
            },
            batch,
        ),
    )


def _schema_check(name: str) -> StepCheck:
    model = TABLES[name].model

    def matches_schema(settings: CurateSettings, batch: str) -> dg.AssetCheckResult:
        rows, failures = validate_table(TABLES[name].file(settings.root, batch), model)
        if failures is not None:
            return dg.AssetCheckResult(
                passed=False,
                metadata=as_metadata(
                    {
                        "rows": rows,
                        "failures": failures.height,
                        "examples": table(failures.columns, failures.head(EXAMPLES).rows(), failures.height),
                    },
                    batch,
                ),
            )
        return dg.AssetCheckResult(passed=True, metadata=as_metadata({"rows": rows}, batch))

    description = f"The {name} partition validates against its pandera model ({model.__name__})."
    return step_check(name, description)(matches_schema)


INGEST_CHECKS = [records_accounted_for, *(_schema_check(name) for name in BATCH_TABLES)]


@batch_stage(*group("staging"), checks=INGEST_CHECKS)
def staging_tables(context: dg.AssetExecutionContext, settings: CurateSettings):
    """Parse one raw batch into the staging tables; bad records go to `quarantine`, never fail the run."""
    batch = context.partition_key
    if not (settings.raw_path / batch).is_dir():
        raise dg.Failure(
            f"no batch folder {batch!r} under {settings.raw_path}: add the folder, or delete the partition "
            "(any per-batch asset's page: the menu beside Materialize, Delete partitions)"
        )
    # What this run reads, fingerprinted before it reads: a file changed during the run makes the batch stale.
    verdict.start(
        settings,
        batch,
        context.run.run_id,
        waiting=lambda holder: context.log.info(f"{batch}: waiting for {holder}, which is processing it"),
    )
    started = time.monotonic()
    report = ingest_batch(
        settings.raw_path,
        batch,
        settings.root,
        chunk_records=settings.read_chunk_records,
        progress=throttled(lambda message: context.log.info(f"{batch}: {message}")),
        max_record_bytes=settings.max_record_bytes,
        state_rules=settings.state_rules(),
    )
    context.log.info(
        f"{batch}: {report.raw_records} raw records -> {report.parsed} parsed, {report.quarantined} quarantined "
        f"in {time.monotonic() - started:.1f}s"
    )
    context.log_event(
        dg.AssetObservation(
            asset_key=raw_batches.key,
            partition=batch,
            metadata={
                "files": len(report.files),
                "bytes": sum((settings.raw_path / f).stat().st_size for f in report.files),
                "raw_records": report.raw_records,
            },
        )
    )
    for name in BATCH_TABLES:
        meta = {
            **written(settings.root, name, batch, report.rows[name]),
        }
        if name in ("trajectories", "quarantine"):
            meta |= {
                "raw_records": report.raw_records,
                "parsed": report.parsed,
                "quarantined": report.quarantined,
                "blank_lines": report.blank_lines,
                "quarantine_reasons": counts_md(report.reasons),
                "files": md_table(["raw file"], [[f] for f in report.files]),
            }
            meta["formats"] = counts_md(report.formats, "format", "files")
            if report.skipped:
                meta["skipped_inputs"] = md_table(["skipped", "reason"], report.skipped)
            if report.notes:
                meta["repairs"] = counts_md(report.notes, "repair", "count")
        yield dg.MaterializeResult(asset_key=name, metadata=meta)
    yield from check_results(INGEST_CHECKS, settings, batch)
