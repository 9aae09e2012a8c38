"""The data root's format version (`<data_root>/state/FORMAT`): code reads a root of its format or an older one
(migrating it once), and refuses in one line a root written by a newer release or a FORMAT it cannot read."""

from __future__ import annotations

import re

from cowork_assets.store import storage
from cowork_assets.store.versions import DamagedState

FORMAT = 2
# Format 1 (no FORMAT file): batches were marked done under state/batches/; format 2 keeps each batch's manifest
# under state/manifests/ (store/batch_state.py), so a format-1 root's batches are redone once, from their files.
MIGRATIONS = {1: ("state/batches",)}  # format -> what the step to the next one removes
REBUILD = "run `cowork-curate run --force` with a new --data-root to rebuild it from the raw files"


def _pointer(root: str) -> str:
    return storage.join(root, "state", "FORMAT")


def found_format(root: str) -> int | None:
    """The root's format: None for an empty root, 1 for a root an earlier release wrote without a FORMAT file."""
    pointer = _pointer(root)
    if not storage.exists(pointer):
        written = any(storage.exists(storage.join(root, part)) for part in ("tables", "published", "state"))
        return 1 if written else None
    text = storage.read_bytes(pointer).decode(errors="replace").strip()
    if not re.fullmatch(r"[0-9]{1,6}", text):  # ASCII digits only: "²" is a digit to str.isdigit, not to int
        raise DamagedState(f"{pointer} holds {text[:40]!r}, not a format number: the data root is damaged; {REBUILD}")
    return int(text)


def ensure_format(root: str) -> int | None:
    """Refuse a root this code cannot read; migrate an older one. Returns the format found before."""
    found = found_format(root)
    if found is not None and found > FORMAT:
        raise DamagedState(
            f"the data root {root} was written by a newer cowork-curate (format {found}; this one reads up to "
            f"{FORMAT}): upgrade cowork-curate, or {REBUILD}"
        )
    if found != FORMAT:
        for step in range(found or FORMAT, FORMAT):
            for part in MIGRATIONS[step]:
                storage.delete(storage.join(root, part))
        storage.write_text_atomic(_pointer(root), f"{FORMAT}\n")
    return found
