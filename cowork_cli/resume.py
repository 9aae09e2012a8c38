"""Which batches are already done: a fingerprint per batch, written only after its run succeeded.

The fingerprint covers the batch's raw files (name, size, modification time), the settings (paths
excluded) and the code version, so a changed file, setting or release reprocesses the batch. Stale
temporary files left by a killed run are swept before a run starts.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import orjson

from cowork_assets.procfs import stat_fields
from cowork_assets.settings import CurateSettings
from cowork_assets.storage import exists, join, read_bytes, write_text_atomic


def fingerprint(settings: CurateSettings, batch: str) -> str:
    from cowork_assets.datasets.card import code_version

    folder = settings.raw_path / batch
    files = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir() if p.is_file())
    payload = orjson.dumps(
        {"files": files, "settings": settings.content(), "code": code_version()}, option=orjson.OPT_SORT_KEYS
    )
    return hashlib.sha256(payload).hexdigest()


def _marker(settings: CurateSettings, batch: str) -> str:
    return join(settings.root, "state", "batches", f"{hashlib.sha256(batch.encode()).hexdigest()[:16]}.json")


def is_done(settings: CurateSettings, batch: str) -> bool:
    marker = _marker(settings, batch)
    return exists(marker) and orjson.loads(read_bytes(marker)).get("fingerprint") == fingerprint(settings, batch)


def mark_done(settings: CurateSettings, batch: str) -> None:
    marker = _marker(settings, batch)
    write_text_atomic(marker, orjson.dumps({"batch": batch, "fingerprint": fingerprint(settings, batch)}).decode())


def sweep_stale_temporaries(data_root: Path) -> int:
    """Remove `.*.<pid>.<id>.tmp` files whose writing process no longer exists."""
    removed = 0
    for tmp in data_root.rglob(".*.tmp") if data_root.exists() else []:
        parts = tmp.name.split(".")
        pid = int(parts[-3]) if len(parts) >= 4 and parts[-3].isdigit() else None
        if pid is not None and not _alive(pid):
            tmp.unlink(missing_ok=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    """Whether `pid` can still write: a killed process stays a zombie until init reaps it (~1 s here)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir("/proc"):  # not Linux: kill() is all there is
        return True
    fields = stat_fields(pid)  # empty: reaped meanwhile
    return bool(fields) and fields[0] != b"Z"
