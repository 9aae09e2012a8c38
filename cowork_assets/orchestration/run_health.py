"""Runs whose process died: each run records the process that executes it, and a run still marked in
progress whose process is gone is marked failed, so its place in the run queue is freed.

Dagster's default run launcher cannot check a run worker's health, so a killed run would otherwise stay
STARTED forever. The process is named by host, pid and start time (a pid alone can be reused), and only
runs recorded on this host are judged: another host's processes cannot be seen from here.
"""

from __future__ import annotations

import os
import socket

import dagster as dg

from cowork_assets.orchestration.partitions import batches, run_partitions
from cowork_assets.runtime.procfs import stat_fields

PROCESS_TAG = "cowork/process"
DATA_ROOT_TAG = "cowork/data_root"  # the data root a run wrote: an instance may hold the runs of several
IN_PROGRESS = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
WAITING = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, *IN_PROGRESS]


def runs_in_flight(instance: dg.DagsterInstance, jobs: tuple[str, ...], assets: frozenset[str]) -> list[dg.DagsterRun]:
    """Runs queued or in progress that are runs of these jobs or materialize any of `assets`: the UI's
    "Materialize" runs a job of its own, with the assets it selected."""
    records = instance.get_run_records(dg.RunsFilter(statuses=WAITING), limit=500)
    return [
        r.dagster_run
        for r in records
        if r.dagster_run.job_name in jobs
        or assets & {key.to_user_string() for key in r.dagster_run.asset_selection or ()}
    ]


def in_flight(instance: dg.DagsterInstance, jobs: tuple[str, ...], assets: frozenset[str] = frozenset()) -> int:
    """How many runs of these jobs, or materializing any of `assets`, are queued or in progress."""
    return len(runs_in_flight(instance, jobs, assets))


def batches_in_flight(instance: dg.DagsterInstance, jobs: tuple[str, ...], assets: frozenset[str]) -> set[str]:
    """The batches that runs queued or in progress (of these jobs, or materializing any of `assets`) process."""
    order = instance.get_dynamic_partitions(batches.name)
    return {b for run in runs_in_flight(instance, jobs, assets) for b in run_partitions(run.tags, order)}


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
