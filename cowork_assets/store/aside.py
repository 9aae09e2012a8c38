"""Where a batch run writes its tables: aside, under `<data_root>/in-progress/<batch>/<run>/`, until its last step
moves them into `tables/` (store/batch_state.py `finish`). A run that fails half-way leaves the batch's last good
tables where they were; what it wrote aside is removed by the batch's next run.

The batch a run is processing is this process's state (`begin` ... `end`): every step of a run executes in the
run's own process, one after another, and the settings resource ends it when the run ends, however it ends. On an
S3 data root, which machines with instances of their own may share, the run holds the batch's lease
(store/lease.py) from `begin` to `release`: a second machine's run of the batch waits for the first to finish.
"""

from __future__ import annotations

from collections.abc import Callable

from cowork_assets.store import lease, storage

FOLDER = "in-progress"
_active: dict[tuple[str, str], str] = {}
_leases: dict[tuple[str, str], lease.Lease] = {}


def begin(root: str, batch: str, run_id: str, waiting: Callable[[str], None] | None = None) -> str:
    """The batch's tables are written aside from now on in this process; earlier runs' leftovers are removed.
    `waiting` is told who holds the batch's lease, if another machine's run does."""
    if lease.applies(root) and (root, batch) not in _leases:
        claim = lease.Lease(root, f"batch-{batch}")
        claim.acquire(waiting)
        _leases[(root, batch)] = claim
    storage.delete(storage.join(root, FOLDER, batch))
    _active[(root, batch)] = folder = storage.join(root, FOLDER, batch, run_id)
    return folder


def folder(root: str, batch: str) -> str | None:
    """Where the batch's tables are written and read in this process now (None: in `tables/`)."""
    return _active.get((root, batch))


def in_progress(root: str) -> dict[str, list[str]]:
    """Batch -> the folders runs of it are writing aside, in any process (one, unless two runs of it overlap)."""
    base, runs = storage.join(root, FOLDER), {}
    for folder in storage.folders_under(base, depth=2):  # batch/run, in one listing
        runs.setdefault(folder.split("/")[0], []).append(storage.join(base, folder))
    return runs


def end(root: str, batch: str) -> None:
    _active.pop((root, batch), None)
    storage.delete(storage.join(root, FOLDER, batch))


def release(root: str, batch: str) -> None:
    """The batch's run has written its last file: another machine's run of it may begin."""
    if claim := _leases.pop((root, batch), None):
        claim.release()


def end_all() -> None:
    """The run is over: nothing is written aside in this process any more (what a failed run wrote stays aside)."""
    _active.clear()
    while _leases:
        _leases.popitem()[1].release()
