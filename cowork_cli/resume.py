"""Which batches are already done: a fingerprint per batch, written only after its run succeeded.

The fingerprint covers the batch's raw files (name, size, modification time), the settings (paths
excluded) and the code version, so a changed file, setting or release reprocesses the batch.
"""

from __future__ import annotations

import hashlib

import orjson

from cowork_assets.settings import CurateSettings
from cowork_assets.store.storage import exists, join, read_bytes, write_text_atomic


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
