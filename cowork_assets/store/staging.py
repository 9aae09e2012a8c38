"""Where a batch run writes its tables: aside, under `<data_root>/staged-batches/<batch>/<run>/`, until its last step
moves them into `tables/` (store/batch_state.py `finish`). A run that fails half-way leaves the batch's last good
tables where they were; its staged files are removed by the batch's next run.

The batch a run is processing is this process's state (`begin` ... `end`): every step of a run executes in the
run's own process, one after another, and the settings resource ends it when the run ends, however it ends.
"""

from __future__ import annotations

from cowork_assets.store import storage

FOLDER = "staged-batches"
_active: dict[tuple[str, str], str] = {}


def begin(root: str, batch: str, run_id: str) -> str:
    """The batch's tables are written aside from now on in this process; earlier runs' leftovers are removed."""
    storage.delete(storage.join(root, FOLDER, batch))
    _active[(root, batch)] = folder = storage.join(root, FOLDER, batch, run_id)
    return folder


def folder(root: str, batch: str) -> str | None:
    """Where the batch's tables are written and read in this process now (None: in `tables/`)."""
    return _active.get((root, batch))


def in_progress(root: str) -> dict[str, list[str]]:
    """Batch -> the folders runs of it are writing aside, in any process (one, unless two runs of it overlap)."""
    base = storage.join(root, FOLDER)
    return {
        batch: [
            storage.join(base, batch, run) for run in storage.list_names(storage.join(base, batch), directories=True)
        ]
        for batch in storage.list_names(base, directories=True)
    }


def end(root: str, batch: str) -> None:
    _active.pop((root, batch), None)
    storage.delete(storage.join(root, FOLDER, batch))


def end_all() -> None:
    """The run is over: nothing is staged in this process any more (what a failed run wrote stays aside)."""
    _active.clear()
