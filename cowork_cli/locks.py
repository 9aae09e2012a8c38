"""The lock of the cross-batch steps, which two runs must not interleave: across processes of one machine (a lock
file), and across machines publishing to one S3 data root (a lease object in it); both in store/lease.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from cowork_assets.store import lease


@contextmanager
def publisher_lock(root: str, local_root: Path, waiting: Callable[[str], None]) -> Iterator[None]:
    """One cross-batch step at a time on this data root: among this machine's processes by a file lock, and on
    an S3 data root among machines by its `publisher` lease. `waiting` is told who holds it."""
    with lease.file_lock(local_root / ".cross-batch.lock", waiting=lambda: waiting("another run on this machine")):
        if not lease.applies(root):
            yield
            return
        with lease.held(root, "publisher", waiting=lambda holder: waiting(f"{holder}, which holds the lease")):
            yield  # the cross-batch runs this process executes find the lease held (orchestration/resources.py)
