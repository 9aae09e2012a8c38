"""Headless materialization through Dagster, as `cowork-curate run` and `make run` do it.

Registers every batch folder as a partition, runs the per-batch job for each batch, then the
cross-batch job, all recorded in the Dagster instance (so `make ui` shows the history).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from multiprocessing import active_children
from pathlib import Path

import dagster as dg

from cowork_assets.datasets.suites import start_early
from cowork_assets.orchestration import verdict
from cowork_assets.orchestration.partitions import batch_runs, partition_tags
from cowork_assets.orchestration.partitions import batches as batches_partitions
from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.orchestration.run_health import in_flight, last_data_root, reap_dead_runs
from cowork_assets.orchestration.stages import PROGRESS, failed_stage
from cowork_assets.runtime import scratch
from cowork_assets.store import lease
from cowork_assets.store.raw_files import discover_batches, not_batches
from cowork_assets.tokens import TokenizerUnavailable, get_encoding
from cowork_cli.workers import flush_logs, worker_count, worker_instance, worker_pool

# Every run the CLI makes says so (the UI lists it with the tag; a launched run has none).
CLI_TAG = {"cowork/launched_by": "cli"}
INSTANCE_HEADER = "# Written by cowork-curate: a local SQLite-backed instance."
INSTANCE_YAML = (
    INSTANCE_HEADER
    + """
# cowork-curate rewrites this file when it differs from what it would write; delete the line above
# to keep your own edits.
# Dagster's SQLite storage (the UI streams a run's events from it as they are written; the files of
# `storage: sqlite`), each keeping its database engines: dagster_project/sqlite_storage.py.
run_storage:
  module: dagster_project.sqlite_storage
  class: KeptEngineSqliteRunStorage
  config:
    base_dir: {history}
event_log_storage:
  module: dagster_project.sqlite_storage
  class: KeptEngineSqliteEventLogStorage
  config:
    base_dir: {runs}
schedule_storage:
  module: dagster_project.sqlite_storage
  class: KeptEngineSqliteScheduleStorage
  config:
    base_dir: {schedules}
# Runs launched from the UI or by a sensor leave the queue within a second.
run_coordinator:
  module: dagster.core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
telemetry:
  enabled: false
nux:
  enabled: false
# Dagster's run monitoring (runs stuck starting or cancelling); dead_run_sensor finds runs whose process died.
run_monitoring:
  enabled: true
  poll_interval_seconds: 30
# Freshness of the published datasets against refresh_cron, shown on their pages.
freshness:
  enabled: true
concurrency:
  # Backfills and sensor runs from the UI: at most this many runs at once (batches are partitions).
  runs:
    max_concurrent_runs: 2
    tag_concurrency_limits:
      - key: cowork/stage
        value: cross-batch
        limit: 1
  # One run at a time may hold the cross-batch steps, however it was launched (pool cowork_cross_batch).
  pools:
    granularity: run
    default_limit: 1
"""
)


def instance_yaml(home: Path) -> str:
    """The `dagster.yaml` this tool writes for an instance at `home`: its storages in the folders of Dagster's
    `storage: sqlite`."""
    where = {"history": ("history",), "runs": ("history", "runs"), "schedules": ("schedules",)}
    return INSTANCE_YAML.format(**{key: json.dumps(str(home.resolve().joinpath(*at))) for key, at in where.items()})


def ensure_instance(home: Path) -> dg.DagsterInstance:
    """The instance at `home`, created if needed (its `dagster.yaml` brought up to date if this tool wrote
    it). Creation is serialised: two processes creating the SQLite schema at once would corrupt it."""
    home.mkdir(parents=True, exist_ok=True)
    with lease.file_lock(home / ".create.lock"):
        config = home / "dagster.yaml"
        wanted = instance_yaml(home)
        current = config.read_text() if config.exists() else INSTANCE_HEADER
        if current.startswith(INSTANCE_HEADER) and current != wanted:
            config.write_text(wanted)
        instance = dg.DagsterInstance.from_config(str(home))
        instance.get_dynamic_partitions(batches_partitions.name)  # creates the storage now, under the lock
    return instance


@dataclass
class RunOutcome:
    batches: list[str]
    skipped: list[str] = field(default_factory=list)  # batches already up to date
    waiting: list[str] = field(default_factory=list)  # batches not ready to be read yet
    ghosts: list[str] = field(default_factory=list)  # batches processed here whose folder is gone from the raw root
    failed: dict[str, str] = field(default_factory=dict)  # job/batch -> error
    failed_checks: list[str] = field(default_factory=list)  # "asset:check [batch] (severity)"
    check_details: dict[str, str] = field(default_factory=dict)  # failed check -> its counts and examples
    seconds: float = 0.0


def _run_config(settings: CurateSettings, debug: bool = False) -> dict:
    """The run config of every job a run executes. A failed step's traceback reaches the console only with
    `debug`: without it the summary names each failure in one line (the UI's event log keeps them all)."""
    return {"resources": {"settings": {"config": settings.model_dump()}}, "loggers": console_logger(debug)}


def console_logger(debug: bool = False) -> dict:
    """The run config's loggers: the console says nothing below CRITICAL unless `debug`."""
    return {"console": {"config": {"log_level": "WARNING" if debug else "CRITICAL"}}}


def materialize_all(
    settings: CurateSettings,
    instance: dg.DagsterInstance,
    only: Sequence[str] = (),
    echo: Callable[[str], None] = print,
    force: bool = False,
    debug: bool = False,
) -> RunOutcome:
    """Register batches and materialize every asset for them. Failures are reported, not raised.

    Batches already processed with the same raw files, settings and code are skipped unless `force`."""
    if reaped := reap_dead_runs(instance):
        echo(f"marked {len(reaped)} run(s) failed whose process had died: {', '.join(reaped)}")
    if (last := last_data_root(instance)) and last != settings.root:
        echo(
            f"this instance's last run wrote the data root {last}, this one writes {settings.root}: its UI shows the "
            "runs of both, each tagged cowork/data_root (a --dagster-home per data root keeps them apart)"
        )
    found = discover_batches(settings.raw_path)
    for name, why in not_batches(settings.raw_path):
        echo(f"skipped {name!r} at the raw root: {why}")
    if only:
        missing = sorted(set(only) - set(found))
        if missing:
            raise FileNotFoundError(f"no batch folder(s) {', '.join(missing)} under {settings.raw_path}")
        found = [b for b in found if b in only]
    if not found:
        raise FileNotFoundError(f"no batch folders under {settings.raw_path}")
    known = set(instance.get_dynamic_partitions(batches_partitions.name))
    instance.add_dynamic_partitions(batches_partitions.name, [b for b in found if b not in known])

    outcome = RunOutcome(found)
    started = time.monotonic()
    if swept := scratch.sweep(settings.local_root):
        echo(f"removed {swept} scratch or temporary file(s) left by killed runs")
    config = _run_config(settings, debug)
    todo = []
    ready = ready_batches(settings, found, echo)
    outcome.waiting = sorted(set(found) - set(ready))
    if not only:
        outcome.ghosts = verdict.not_in_raw_root(settings)
    if not ready:  # nothing to read yet is a normal state, not a failure: no corpus job either
        echo(f"no batch is ready yet ({len(found)} waiting): nothing to do now")
        outcome.seconds = time.monotonic() - started
        return outcome
    for batch in ready:
        if not force and verdict.to_process(settings, batch) is None:
            echo(f"batch {batch}: up to date (use --force to redo)")
            outcome.skipped.append(batch)
        else:
            todo.append(batch)
    start_early()  # the gates' helper imports Great Expectations while the batches run (unless started already)
    workers = worker_count(settings, todo)
    parallel = workers > 0
    # Consecutive batches share a run (its fixed cost paid once), each its own partition; with workers, one run each
    # at a time. A batch whose last run failed runs alone.
    per_run = min(settings.batches_per_run, -(-len(todo) // workers)) if parallel else settings.batches_per_run
    order = instance.get_dynamic_partitions(batches_partitions.name)
    runs = batch_runs(order, todo, per_run, alone=verdict.failed_batches(instance, todo))
    if parallel:  # this process waits on the workers: it loads the tokenizer meanwhile (`_warm_up`)
        threading.Thread(target=_warm_up, args=(settings.token_encoding,), daemon=True).start()
        pool = worker_pool(workers, instance.root_directory)
        results = pool.map(_process_batches, [config] * len(runs), runs)
    else:
        pool, results = None, (_process_batches(config, run, instance) for run in runs)
    from cowork_cli.origin import execute
    from dagster_project.jobs import CORPUS_JOBS

    retry = []
    with progress(echo):  # each batch of a shared run as it is written
        try:
            done = 0
            for run in results:
                for batch in run:
                    done += 1
                    if not batch.ok and batch.shared_with:  # failed beside others: retried alone, below
                        retry.append(batch.batch)
                        echo(f"[{done}/{len(todo)}] batch {batch.batch}: FAILED in a run of {batch.shared_with + 1}")
                        continue
                    _report(outcome, batch, f"[{done}/{len(todo)}]", echo)
        except BaseException:  # interrupted (Ctrl-C, SIGTERM): the workers go too, not only when they finish
            for child in active_children():
                child.kill()
            raise
        finally:
            if pool:  # finished workers exit on their own; waiting for their teardown would only delay what follows
                pool.shutdown(wait=False, cancel_futures=True)
    for batch in retry:
        _report(outcome, _process_batches(config, [batch], instance)[0], "retried alone:", echo)
    corpus = verdict.corpus_now(instance, settings)
    if corpus.held_back:
        named = "; ".join(f"{b} ({checks})" for b, checks in corpus.held_back.items())
        echo(f"holding back batch(es) {named}: their runs are in no dataset (hold_back_refused_batches)")
    if blocked := corpus.blocked:
        echo(f"not refreshing the corpus: {blocked}")
        outcome.failed["publication"] = blocked
        outcome.seconds = time.monotonic() - started
        return outcome
    # Batches run in parallel across processes; the cross-batch steps of two runs take turns.
    with verdict.publisher_lock(
        settings, waiting=lambda holder: echo(f"waiting for another run's cross-batch step to finish ({holder})")
    ):
        _wait_for_runs_elsewhere(instance, echo)
        for job in CORPUS_JOBS:
            result = _execute_on_one_corpus(execute, job, instance, config, settings, echo)
            echo(f"{job}: {'ok' if result.success else 'FAILED'}")
            if not result.success:
                outcome.failed[job] = _first_error(result)
            _collect_failed_checks(outcome, result.get_asset_check_evaluations(), None)
    outcome.seconds = time.monotonic() - started
    return outcome


REFRESH_ATTEMPTS = 3


def _execute_on_one_corpus(execute: Callable, job: str, instance, config: dict, settings, echo: Callable[[str], None]):
    """Run a corpus job; again (REFRESH_ATTEMPTS in all) when it failed while the corpus changed under it. A batch
    another process finished meanwhile makes the selection's tables refuse to be read with the batches' as they are
    now (`Table.read_current`): the next attempt computes them from the corpus as it is."""
    for attempt in range(1, REFRESH_ATTEMPTS + 1):
        before = verdict.corpus_version(settings)
        result = execute(job, instance, config, CLI_TAG)
        if result.success or attempt == REFRESH_ATTEMPTS or verdict.corpus_version(settings) == before:
            return result
        echo(f"{job}: the corpus changed while it ran (a batch finished elsewhere); running it again")
    return result


def ready_batches(settings: CurateSettings, found: list[str], echo: Callable[[str], None]) -> list[str]:
    """The batches to read now: those without their completion marker are left for a later run, and those still
    being written are waited for until quiet for settle_seconds (left for later if they never are)."""
    ready, waiting, told = [], list(found), set()
    give_up = time.monotonic() + max(60.0, 10 * settings.settle_seconds)
    while waiting:
        still = []
        for batch in waiting:
            found = verdict.not_ready(settings, batch)
            if found is None:
                ready.append(batch)
                continue
            why, settling = found
            if not settling or time.monotonic() > give_up:
                echo(f"batch {batch}: not read now: {why}")
            else:
                still.append(batch)
                if batch not in told:
                    echo(f"batch {batch}: waiting: {why}")
                    told.add(batch)
        waiting = still
        if waiting:
            time.sleep(min(1.0, settings.settle_seconds))
    return sorted(ready)


def _wait_for_runs_elsewhere(instance: dg.DagsterInstance, echo: Callable[[str], None]) -> None:
    """The cross-batch steps wait for cross-batch runs launched elsewhere (the UI, a schedule) on this instance."""
    from dagster_project.jobs import CORPUS_JOBS, CROSS_BATCH_ASSETS

    told = False
    while in_flight(instance, CORPUS_JOBS, assets=CROSS_BATCH_ASSETS):
        if not told:
            echo("waiting for a cross-batch run launched from the Dagster UI to finish")
            told = True
        time.sleep(2)
        reap_dead_runs(instance)


def _warm_up(encoding: str) -> None:
    """The tokenizer's rank file takes half a second to load; the cross-batch phase needs it, so this
    otherwise idle process loads it while the batch workers run, at a low priority: on cores the workers
    leave idle, not at their start-up's expense. Not while this process runs the batches itself: the load holds
    the GIL, and a thread at a low priority that holds it stalls the batches whenever other work keeps the
    machine busy (a small run took 3 to 5 s longer beside two busy processes)."""
    with suppress(OSError, AttributeError):  # a thread's own priority: Linux only
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    with suppress(TokenizerUnavailable):  # reported by the step that needs it
        get_encoding(encoding)


class _Echo(logging.Handler):
    def __init__(self, echo: Callable[[str], None]):
        super().__init__(logging.INFO)
        self.echo = echo

    def emit(self, record: logging.LogRecord) -> None:
        self.echo(record.getMessage())


@contextmanager
def progress(echo: Callable[[str], None]) -> Iterator[None]:
    """The batch step's progress lines (each batch of a shared run as it is written) said through `echo`."""
    logger, handler = PROGRESS, _Echo(echo)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


@dataclass(frozen=True)
class BatchResult:
    batch: str
    ok: bool
    error: str | None
    failed_checks: list[str]
    check_details: dict[str, str]
    seconds: float  # of its run
    shared_with: int  # how many other batches its run processed


def _report(outcome: RunOutcome, batch: BatchResult, prefix: str, echo: Callable[[str], None]) -> None:
    if not batch.ok:
        outcome.failed[batch.batch] = batch.error
    outcome.failed_checks += batch.failed_checks
    outcome.check_details |= batch.check_details
    run = f"run of {batch.shared_with + 1}: " if batch.shared_with else ""
    echo(f"{prefix} batch {batch.batch}: {'ok' if batch.ok else 'FAILED'} ({run}{batch.seconds:.1f}s)")


def _process_batches(config: dict, run: list[str], instance: dg.DagsterInstance | None = None) -> list[BatchResult]:
    """Run the per-batch job over consecutive batches (in a worker process when batches run in parallel): each
    batch's outcome, and the checks that failed on it."""
    from cowork_cli.origin import execute
    from dagster_project.jobs import BATCH_JOB

    in_worker = instance is None
    instance = instance or worker_instance()
    t0 = time.monotonic()
    result = execute(BATCH_JOB, instance, config, {**partition_tags(run[0], run[-1]), **CLI_TAG})
    seconds = time.monotonic() - t0
    if in_worker:
        flush_logs()
    written = {
        e.step_materialization_data.materialization.partition
        for e in result.get_asset_materialization_events()
        if e.asset_key == verdict.MANIFEST
    }
    evaluations = result.get_asset_check_evaluations()  # in the order their metadata was written
    out = []
    for batch in run:
        checks = RunOutcome([])
        _collect_failed_checks(checks, [e for e in evaluations if e.partition in (batch, None)], batch)
        ok = result.success or (len(run) > 1 and batch in written)
        error = None if ok else _first_error(result)
        out.append(BatchResult(batch, ok, error, checks.failed_checks, checks.check_details, seconds, len(run) - 1))
    return out


def _collect_failed_checks(outcome: RunOutcome, evaluations, batch: str | None) -> None:
    where = f" [{batch}]" if batch else ""
    for e in evaluations:
        if e.passed:
            continue
        name = f"{e.asset_key.to_user_string()}:{e.check_name}{where} ({e.severity.value})"
        outcome.failed_checks.append(name)
        lines = [
            f"{k}: {v.value}"
            for k, v in e.metadata.items()
            if isinstance(v.value, (int, float, str)) and "\n" not in str(v.value)
        ]
        lines += [str(v.value) for k, v in e.metadata.items() if k in ("examples", "failures")]
        outcome.check_details[name] = "\n".join(lines)


def _first_error(result) -> str:
    """The first failed step (of a batch run, the stage it stopped in) and its root cause, in one line."""
    from dagster_project.jobs import BATCH_STAGES, batch_stages

    for event in result.all_events:
        if event.is_failure and event.event_specific_data is not None:
            error = getattr(event.event_specific_data, "error", None)
            if error is None:
                continue
            where = event.step_key
            if where == batch_stages.op.name:
                reported = {e.asset_key for e in result.get_asset_materialization_events()}
                reported |= {dg.AssetCheckKey(e.asset_key, e.check_name) for e in result.get_asset_check_evaluations()}
                where = failed_stage(BATCH_STAGES, reported) or where
            return f"{where}: {root_cause(error)}" if where else root_cause(error)
    return "run failed (see the Dagster UI for the event log)"


def root_cause(error) -> str:
    """The innermost error of a Dagster error chain, on one line; a full disk said in words."""
    while error.cause is not None:
        error = error.cause
    message = " ".join(error.message.split())
    if "No space left on device" in message:
        return f"no space left on device ({message})"
    return message
