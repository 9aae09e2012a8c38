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

from cowork_assets.ingest.raw_files import discover_batches
from cowork_assets.runtime.procfs import stat_fields

if TYPE_CHECKING:  # settings reads the machine's limits from here
    from cowork_assets.settings import CurateSettings

PROCESS_TAG = "cowork/process"
IN_PROGRESS = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
WAITING = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, *IN_PROGRESS]


def in_flight(instance: dg.DagsterInstance, jobs: tuple[str, ...]) -> int:
    """Runs of these jobs queued or in progress."""
    return sum(len(instance.get_run_records(dg.RunsFilter(job_name=job, statuses=WAITING), limit=10)) for job in jobs)


def failed_batches(instance: dg.DagsterInstance, batches: list[str], job: str = "process_batch") -> list[str]:
    """The batches whose latest run of `job` failed or was canceled (a batch never run is not failed)."""
    failed = []
    for batch in batches:
        latest = instance.get_run_records(dg.RunsFilter(job_name=job, tags={"dagster/partition": batch}), limit=1)
        if latest and latest[0].dagster_run.status in (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED):
            failed.append(batch)
    return failed


def publication_blocked(instance: dg.DagsterInstance, settings: CurateSettings) -> str | None:
    """Why no dataset may be published now (a batch under the raw root whose last run failed), or None."""
    if settings.publish_without_failed_batches or not settings.raw_path.is_dir():
        return None
    if failed := failed_batches(instance, discover_batches(settings.raw_path)):
        return (
            f"batch(es) {', '.join(failed)} failed, and no dataset is published without them (run them again, or "
            "set publish_without_failed_batches=true to publish the others)"
        )
    return None


def process_identity(pid: int) -> str | None:
    """`host:pid:start time` of a live process (None once it is gone)."""
    fields = stat_fields(pid)
    return f"{socket.gethostname()}:{pid}:{fields[19].decode()}" if len(fields) > 19 else None


def record_process(instance: dg.DagsterInstance, run_id: str) -> None:
    """Tag the run with the process executing it (this one)."""
    if identity := process_identity(os.getpid()):
        instance.add_run_tags(run_id, {PROCESS_TAG: identity})


def is_dead(identity: str) -> bool:
    """Whether the recorded process is gone (False for another host's: it cannot be seen from here)."""
    host, pid, _ = identity.rsplit(":", 2)
    return host == socket.gethostname() and process_identity(int(pid)) != identity


def reap_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark failed every in-progress run whose process is gone; returns their run ids."""
    reaped = []
    for record in instance.get_run_records(dg.RunsFilter(statuses=IN_PROGRESS)):
        run = record.dagster_run
        identity = run.tags.get(PROCESS_TAG)
        if identity and is_dead(identity):
            instance.report_run_failed(run, f"the run's process ({identity}) is gone: it was killed or crashed")
            reaped.append(run.run_id)
    return reaped
