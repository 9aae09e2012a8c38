"""Runs whose process died: each run records the process that executes it, and a run still marked in
progress whose process is gone is marked failed, so its place in the run queue is freed.

Dagster's default run launcher cannot check a run worker's health, so a killed run would otherwise stay
STARTED forever. The process is named by host, pid and start time (a pid alone can be reused), and only
runs recorded on this host are judged: another host's processes cannot be seen from here.
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

import dagster as dg

from cowork_assets.markdown import table
from cowork_assets.runtime.procfs import stat_fields
from cowork_assets.store.raw_files import discover_batches

if TYPE_CHECKING:  # settings reads the machine's limits from here
    from cowork_assets.settings import Settings

PROCESS_TAG = "cowork/process"
DATA_ROOT_TAG = "cowork/data_root"  # the data root a run wrote: an instance may hold the runs of several
IN_PROGRESS = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
CHECK_EVALUATION = dg.DagsterEventType.ASSET_CHECK_EVALUATION
WAITING = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, *IN_PROGRESS]


def in_flight(
    instance: dg.DagsterInstance,
    jobs: tuple[str, ...],
    partition: str | None = None,
    assets: frozenset[str] = frozenset(),
) -> int:
    """Runs (of this partition) queued or in progress that are runs of these jobs or materialize any of `assets`:
    the UI's "Materialize" runs a job of its own, with the assets it selected."""
    tags = {"dagster/partition": partition} if partition else {}
    records = instance.get_run_records(dg.RunsFilter(statuses=WAITING, tags=tags), limit=500)
    return sum(
        1
        for r in records
        if r.dagster_run.job_name in jobs
        or assets & {key.to_user_string() for key in r.dagster_run.asset_selection or ()}
    )


def failed_batches(instance: dg.DagsterInstance, batches: list[str], job: str = "process_batch") -> list[str]:
    """The batches whose latest run of `job` failed or was canceled (a batch never run is not failed)."""
    failed = []
    for batch in batches:
        latest = instance.get_run_records(dg.RunsFilter(job_name=job, tags={"dagster/partition": batch}), limit=1)
        if latest and latest[0].dagster_run.status in (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED):
            failed.append(batch)
    return failed


def failed_checks(instance: dg.DagsterInstance, run_id: str | None) -> dict[str, str]:
    """The checks that failed in a run, as `asset:check` -> severity (`ERROR` or `WARN`)."""
    if not run_id or instance.get_run_record_by_id(run_id) is None:
        return {}  # a run of another instance (or history deleted): no result to go by
    evaluations = (e.asset_check_evaluation for e in instance.all_logs(run_id, of_type=CHECK_EVALUATION))
    return {
        f"{e.asset_key.to_user_string()}:{e.check_name}": e.severity.value
        for e in evaluations
        if e is not None and not e.passed
    }


def _errors(batch: dict) -> list[str]:
    """The ERROR-severity checks a `corpus_batches` entry's run failed."""
    return sorted(name for name, severity in batch["failed_checks"].items() if severity == "ERROR")


def corpus_batches(instance: dg.DagsterInstance, settings: Settings, deep: bool = True) -> list[dict]:
    """Each batch the corpus reads: its state (store/batch_state.py) and the checks its run failed, as its manifest
    records them (the same on every instance and machine); a manifest written before manifests held a verdict
    falls back on this instance's record of the run."""
    from cowork_assets.store import batch_state

    fingerprint = batch_state.settings_fingerprint(settings.batch_content())
    states = batch_state.processed_states(settings.root, settings.raw_path, fingerprint, deep)
    return [{"state": s, "failed_checks": _recorded(instance, s) if not s.problem else {}} for s in states]


def _recorded(instance: dg.DagsterInstance, state) -> dict[str, str]:
    found = state.failed_checks
    return failed_checks(instance, state.run_id) if found is None else found


def run_verdict(instance: dg.DagsterInstance, run_id: str) -> dict:
    """What a batch's manifest keeps of its run's checks: each evaluated check's result and severity, and where the
    run ran (the instance's folder, when it has one)."""
    evaluations = (e.asset_check_evaluation for e in instance.all_logs(run_id, of_type=CHECK_EVALUATION))
    checks = {
        f"{e.asset_key.to_user_string()}:{e.check_name}": {"passed": e.passed, "severity": e.severity.value}
        for e in evaluations
        if e is not None
    }
    return {"checks": checks, "run_id": run_id, "instance": instance.root_directory, "host": socket.gethostname()}


def batch_checks_summary(batches: list[dict]) -> str:
    """Markdown: each check that failed on some batch, its severity and the batches it failed on. An asset's
    overview shows the latest partition's checks only, so this says what the other partitions' runs found."""
    failing: dict[tuple[str, str], list[str]] = {}
    for b in batches:
        for name, severity in b["failed_checks"].items():
            failing.setdefault((name, severity), []).append(b["state"].batch)
    if not failing:
        return f"Every check passed on each of the {len(batches)} batch(es)."
    rows = [
        (name, severity, f"{len(names)} of {len(batches)}", ", ".join(names))
        for (name, severity), names in sorted(failing.items(), key=lambda kv: (kv[0][1] != "ERROR", kv[0][0]))
    ]
    return table(["check", "severity", "batches failed", "batches"], rows)


def refused(batches: list[dict]) -> dict[str, str]:
    """The batches whose run failed an ERROR-severity check: batch -> those checks."""
    return {b["state"].batch: ", ".join(errors) for b in batches if (errors := _errors(b))}


def held_back(instance: dg.DagsterInstance, settings: Settings) -> dict[str, str]:
    """The batches publication leaves out (`hold_back_refused_batches`): batch -> the ERROR checks that refused it."""
    return refused(corpus_batches(instance, settings, deep=False)) if settings.hold_back_refused_batches else {}


def batch_card(batches: list[dict], held: bool = False) -> list[dict]:
    """What a dataset card says of the batches it was built from: the run and the settings each was processed with
    (one fingerprint for all: publication refuses a mix), and the ERROR checks it failed, whether it was published
    anyway or (`held`: hold_back_refused_batches) held back."""
    return [
        {
            "batch": b["state"].batch,
            "run_id": b["state"].run_id,
            "settings": (b["state"].settings or "")[:16],
            "failed_error_checks": _errors(b),
            "held_back": held and bool(_errors(b)),
        }
        for b in batches
    ]


def publication_blocked(
    instance: dg.DagsterInstance, settings: Settings, deep: bool = True, batches: list[dict] | None = None
) -> str | None:
    """Why no dataset may be published now, or None: a batch whose last run failed, a processed batch whose tables
    are damaged (by digest when `deep`, else by size), processed from other raw files or with other settings, or
    whose run failed an ERROR-severity check. Each reason names the batches."""
    reasons = []
    if settings.raw_path.is_dir() and not settings.publish_without_failed_batches:
        if failed := failed_batches(instance, discover_batches(settings.raw_path)):
            reasons.append(
                f"batch(es) {', '.join(failed)} failed, and no dataset is published without them (run them again, or "
                "set publish_without_failed_batches=true to publish the others)"
            )
    batches = corpus_batches(instance, settings, deep) if batches is None else batches
    states = [b["state"] for b in batches]
    if damaged := [f"{s.batch} ({s.damage})" for s in states if s.damage]:
        reasons.append(f"batch(es) {'; '.join(damaged)}: run them again, or `cowork-curate drop` them")
    if stale := [f"{s.batch} ({s.stale})" for s in states if s.stale and not s.damage]:
        reasons.append(f"batch(es) {'; '.join(stale)}: they are redone before a dataset is built from them")
    if not settings.publish_despite_failed_checks and not settings.hold_back_refused_batches:
        if named := [f"{b['state'].batch} ({', '.join(_errors(b))})" for b in batches if _errors(b)]:
            reasons.append(
                f"ERROR check(s) failed on batch(es) {'; '.join(named)} (fix the cause and run them again, or set "
                "publish_despite_failed_checks=true to publish them as they are, or hold_back_refused_batches=true to "
                "publish the other batches without them)"
            )
    return "; ".join(reasons) or None


def process_identity(pid: int) -> str | None:
    """`host:pid:start time` of a live process (None once it is gone)."""
    fields = stat_fields(pid)
    return f"{socket.gethostname()}:{pid}:{fields[19].decode()}" if len(fields) > 19 else None


def record_process(instance: dg.DagsterInstance, run_id: str) -> None:
    """Tag the run with the process executing it (this one), under the run's own id: a re-execution copies its
    parent's tags, and the parent's process must not be taken for its own."""
    if identity := process_identity(os.getpid()):
        instance.add_run_tags(run_id, {PROCESS_TAG: f"{run_id}@{identity}"})


def last_data_root(instance: dg.DagsterInstance) -> str | None:
    """The data root the instance's latest run that names one wrote."""
    for record in instance.get_run_records(limit=50):
        if root := record.dagster_run.tags.get(DATA_ROOT_TAG):
            return root
    return None


def recorded_process(run: dg.DagsterRun) -> str | None:
    """The process recorded for this run by itself (not one copied from the run it re-executes)."""
    run_id, _, identity = run.tags.get(PROCESS_TAG, "").partition("@")
    return identity if run_id == run.run_id and identity else None


def is_dead(identity: str) -> bool:
    """Whether the recorded process is gone (False for another host's: it cannot be seen from here)."""
    host, pid, _ = identity.rsplit(":", 2)
    return host == socket.gethostname() and process_identity(int(pid)) != identity


def reap_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark failed every in-progress run whose process is gone; returns their run ids."""
    reaped = []
    for record in instance.get_run_records(dg.RunsFilter(statuses=IN_PROGRESS)):
        run = record.dagster_run
        identity = recorded_process(run)
        if identity and is_dead(identity):
            instance.report_run_failed(run, f"the run's process ({identity}) is gone: it was killed or crashed")
            reaped.append(run.run_id)
    return reaped
