"""The batch worker processes of `cowork-curate run`: whether a run uses them, their environment, and the server
they are forked from.

The workers are forked from a server process that imported the libraries the pipeline loads (multiprocessing's
forkserver, kept while this process lives): each worker starts without importing Dagster and its storage again,
about 1.4 s of CPU each. `start_server` starts it early, so that it imports while this process still does its
own work. The server runs no thread but its own (`PRELOAD`) and computes nothing, and it dies with this process
(`fork_server.py`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing import forkserver, get_context
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dagster as dg

    from cowork_assets.orchestration.resources import CurateSettings

# What the fork server imports: Dagster, its storage and DuckDB, about half of the pipeline's import time, and
# nothing that starts a thread on import (polars, pyarrow and pandas start their allocators' background threads,
# numpy its math library's). A fork keeps only the forking thread: a worker would free its memory on its own thread,
# more slowly, and a lock another thread held would stay held.
PRELOAD = ["cowork_cli.fork_server", "dagster", "dagster_project.sqlite_storage", "alembic", "duckdb"]


def in_workers(settings: CurateSettings, batches: Sequence[str]) -> bool:
    """Whether `batches` run in `max_concurrent` worker processes rather than one after another in this one: when
    they are many, or hold `parallel_from_mb` MB of raw files or more."""
    from cowork_assets.settings import PARALLEL_FROM_BATCHES

    return (
        len(batches) >= PARALLEL_FROM_BATCHES or raw_megabytes(settings.raw_path, batches) >= settings.parallel_from_mb
    )


def raw_megabytes(raw_root: Path, batches: Sequence[str]) -> float:
    """MB of raw files in these batch folders."""
    from cowork_assets.store.raw_files import batch_entries

    return sum(f.stat().st_size for b in batches for f in batch_entries(raw_root, b)[0]) / 1e6


def worker_environment(workers: int) -> dict[str, str]:
    """Environment of the batch workers: the cores are shared out between them, one polars thread pool per
    core, not per worker. A setting the user made wins. (Polars' allocator setting they inherit: see
    cowork_assets/__init__.py.)"""
    return {"POLARS_MAX_THREADS": os.environ.get("POLARS_MAX_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))}


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """Environment variables for the processes started inside the block."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def worker_count(settings: CurateSettings, batches: Sequence[str]) -> int:
    """How many worker processes `batches` run in: 0 when they run one after another in this process."""
    workers = min(settings.max_concurrent, len(batches))
    return workers if workers > 1 and in_workers(settings, batches) else 0


def start_server(workers: int) -> None:
    """Start the fork server now, if it is not running, in the environment of `workers` workers."""
    with environment(**worker_environment(workers)):
        _ensure_server()


def _ensure_server() -> None:
    forkserver.set_forkserver_preload(PRELOAD)
    forkserver.ensure_running()


def start_early(settings: CurateSettings, batches: Sequence[str]) -> None:
    """Start the fork server now if these batches would run in workers, so that it imports while this process opens
    the instance and checks the batches. (When they turn out to be up to date, its imports took a core the run
    left idle.)"""
    if workers := worker_count(settings, batches):
        start_server(workers)


def worker_pool(workers: int, home: str) -> ProcessPoolExecutor:
    """`workers` batch worker processes on the instance at `home`. Each takes this process's environment as it is
    now, as a spawned one would, not the server's from when it started, before it imports polars (which reads
    `POLARS_MAX_THREADS` and its allocator's settings on import)."""
    with environment(**worker_environment(workers)):
        _ensure_server()
        return ProcessPoolExecutor(
            max_workers=workers,
            mp_context=get_context("forkserver"),
            initializer=_start,
            initargs=(home, dict(os.environ)),
        )


_instance: dg.DagsterInstance | None = None


def worker_instance() -> dg.DagsterInstance | None:
    """The instance this worker process opened when it started (None outside a worker)."""
    return _instance


def _start(home: str, environ: dict[str, str]) -> None:
    """Pool initializer: the parent's environment, and the instance opened once per worker process, whose batches'
    progress lines go to the console as the parent's do."""
    global _instance
    os.environ.clear()
    os.environ.update(environ)
    import dagster as dg

    from cowork_assets.runtime.procfs import die_with_parent
    from cowork_cli.runner import progress
    from dagster_project.definitions import job_definition  # tunes the process, as in the parent
    from dagster_project.jobs import BATCH_JOB

    progress(print).__enter__()
    die_with_parent()  # the fork server, which dies with the run
    job_definition(BATCH_JOB)
    _instance = dg.DagsterInstance.from_config(home)


def flush_logs() -> None:
    """What the log handlers hold, written: a worker ends without the interpreter's teardown (the fork server's
    children exit at once), which would have flushed them."""
    loggers = [
        logging.getLogger(),
        *(v for v in logging.Logger.manager.loggerDict.values() if isinstance(v, logging.Logger)),
    ]
    for handler in {h for logger in loggers for h in logger.handlers}:
        handler.flush()
