"""Sensors: new batch folders become partitions and get their run; the corpus is refreshed once no batch
run is in flight; runs whose process died are marked failed.

Dagster's sensor daemon evaluates sensors in a loop of at least 5 s; their minimum interval defaults to 1 s so
that every loop evaluates them (a longer one skips loops). The code location sets it from COWORK_SENSOR_INTERVAL.
"""

import hashlib
from collections import Counter

import dagster as dg

from cowork_assets.orchestration import verdict
from cowork_assets.orchestration.partitions import batch_runs, batches, partition_tags
from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.orchestration.run_health import batches_in_flight, in_flight, reap_dead_runs
from cowork_assets.store.raw_files import discover_batches
from dagster_project.jobs import (
    BATCH_ASSETS,
    CORPUS_JOBS,
    CROSS_BATCH_ASSETS,
    process_batch,
    refresh_corpus,
    refresh_warehouse,
)

INTERVAL = 1
FINISHED = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE]


def _latest(instance: dg.DagsterInstance, job: str, statuses=None) -> dg.RunRecord | None:
    records = instance.get_run_records(dg.RunsFilter(job_name=job, statuses=statuses), limit=1)
    return records[0] if records else None


NEW_BATCH = dict(
    job=process_batch,
    description="Registers each batch folder under raw_root as a partition and requests a process_batch run for each "
    "batch that is not processed as it is now: new, its files changed (a file added, appended to, made readable), "
    "processed with other settings, or its tables damaged; consecutive batches share a run (up to batches_per_run), "
    "each its own partition. A folder is read once quiet for settle_seconds (and once it holds "
    "batch_ready_marker, if set); not while a cross-batch run is reading every batch's tables. A batch whose run "
    "failed is requested again alone; the run key carries the fingerprint of the files and settings, so a batch "
    "whose run of its own failed is not retried until it changes.",
)


def new_batch_sensor(context: dg.SensorEvaluationContext, settings: CurateSettings):
    try:
        found = discover_batches(settings.raw_path)
    except FileNotFoundError as exc:
        return dg.SkipReason(str(exc))
    instance = context.instance
    known = instance.get_dynamic_partitions(batches.name)
    registered = set(known)
    new = [b for b in found if b not in registered]
    if busy := in_flight(instance, CORPUS_JOBS, assets=CROSS_BATCH_ASSETS):
        return dg.SkipReason(f"batch folders wait for {busy} cross-batch run(s) to finish")
    running = batches_in_flight(instance, (process_batch.name,), BATCH_ASSETS)
    todo, waiting = {}, []
    for batch in found:
        if why := verdict.not_ready(settings, batch):
            waiting.append(f"{batch}: {why[0]}")
        elif batch not in running and (state := verdict.to_process(settings, batch, deep=False)):
            todo[batch] = state
    alone = verdict.failed_batches(instance, list(todo))
    runs = batch_runs([*known, *new], todo, settings.batches_per_run, alone)
    requests = [_request([todo[b] for b in run]) for run in runs]
    if not requests and not new:
        return dg.SkipReason(
            "; ".join(waiting) if waiting else f"every batch folder under {settings.raw_path} is processed as it is"
        )
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[batches.build_add_request(new)] if new else [],
        skip_reason="; ".join(waiting) if waiting and not requests else None,
    )


def _request(run: list[verdict.ToProcess]) -> dg.RunRequest:
    """One run over consecutive batches, keyed by the state of each (its raw files and the settings)."""
    first, last = run[0].batch, run[-1].batch
    whys = Counter(t.why for t in run)
    why = run[0].why if len(run) == 1 else ", ".join(f"{n}: {why}" for why, n in whys.most_common())
    if len(run) == 1:
        return dg.RunRequest(partition_key=first, run_key=f"process:{first}:{run[0].key}", tags={"cowork/why": why})
    states = hashlib.sha256(" ".join(f"{t.batch}:{t.key}" for t in run).encode()).hexdigest()[:16]
    tags = {**partition_tags(first, last), "cowork/why": why}
    return dg.RunRequest(run_key=f"process:{first}..{last}:{states}", tags=tags)


CORPUS_REFRESH = dict(
    jobs=[refresh_corpus, refresh_warehouse],
    description="Once every batch run in flight has finished, refreshes everything across batches (findings, dedup, "
    "exclusions, the gated datasets) when a batch run finished since the last refresh, and the DuckDB file after it "
    "(the run queue starts it when the refresh ends, whatever its outcome): a "
    "dataset version is never built from a half-processed batch, nor while a batch's last run failed (unless "
    "publish_without_failed_batches is set).",
)


def corpus_refresh_sensor(context: dg.SensorEvaluationContext, settings: CurateSettings):
    instance = context.instance
    if batch_runs := in_flight(instance, (process_batch.name,), assets=BATCH_ASSETS):
        return dg.SkipReason(f"waiting for {batch_runs} batch run(s) in flight")
    if in_flight(instance, CORPUS_JOBS, assets=CROSS_BATCH_ASSETS):
        return dg.SkipReason("a cross-batch run is in flight")
    batch = _latest(instance, process_batch.name, FINISHED)  # a failed run of several batches wrote the others
    corpus = _latest(instance, refresh_corpus.name)
    if batch is not None and (corpus is None or batch.end_time > corpus.create_timestamp.timestamp()):
        if blocked := verdict.corpus_now(instance, settings, deep=False).blocked:  # the publish steps check by digest
            return dg.SkipReason(f"not refreshing the corpus: {blocked}")
        after = batch.dagster_run.run_id  # one request for both: the queue runs one cross-batch run at a time
        return [
            dg.RunRequest(job_name=refresh_corpus.name, run_key=f"corpus-after:{after}"),
            dg.RunRequest(job_name=refresh_warehouse.name, run_key=f"warehouse-after-corpus-after:{after}"),
        ]
    warehouse = _latest(instance, refresh_warehouse.name)
    built = warehouse and (warehouse.start_time or warehouse.create_timestamp.timestamp())
    if corpus is not None and (warehouse is None or (corpus.end_time or 0) > built):
        return dg.RunRequest(job_name=refresh_warehouse.name, run_key=f"warehouse-after:{corpus.dagster_run.run_id}")
    return dg.SkipReason("the corpus is up to date with every finished batch run")


DEAD_RUNS = dict(
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Marks failed any run whose process is gone (killed, crashed), so it frees its place in the run queue.",
)


def dead_run_sensor(context: dg.SensorEvaluationContext):
    reaped = reap_dead_runs(context.instance)
    return dg.SkipReason(f"marked {len(reaped)} dead run(s) failed: {', '.join(reaped)}" if reaped else "no dead runs")


def interval_from(value: str | None) -> int:
    """The sensors' interval from COWORK_SENSOR_INTERVAL: a whole number of seconds, else the default."""
    return int(value) if value and value.strip().isdigit() and int(value) >= 1 else INTERVAL


def sensors(interval: int = INTERVAL) -> list[dg.SensorDefinition]:
    """The three sensors, each evaluated at most every `interval` seconds."""
    return [
        dg.sensor(minimum_interval_seconds=interval, **options)(function)
        for function, options in (
            (new_batch_sensor, NEW_BATCH),
            (corpus_refresh_sensor, CORPUS_REFRESH),
            (dead_run_sensor, DEAD_RUNS),
        )
    ]
