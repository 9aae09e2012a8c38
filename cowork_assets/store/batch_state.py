"""What a processed batch is: the raw files it was read from, the settings and code it ran with, and the table
files it wrote, with their digests (its manifest, `<data_root>/state/manifests/<batch>.json`).

A batch run records its raw files' fingerprint when ingest starts (`start`), and its last step writes the
manifest (`finish`) once every per-batch table is written. A batch counts as processed only while its manifest
verifies: every file it lists is there with its size and digest, the raw files are those it was read from and
the settings are the current ones. A table file missing or rewritten since (a step re-run alone, a run that failed
half-way, a deleted file) is damage, never "no rows".

Moving a batch's tables into place and writing its manifest is one commit to what reads the batches' states on this
machine: both hold its lock file (`committing`), so a run publishing while another run's batch finishes sees that
batch before its commit or after it, never half-way (tables there, no manifest yet: damage).
"""

from __future__ import annotations

import functools
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import orjson
from pyarrow.fs import FileInfo

from cowork_assets.runtime.code_versions import batch_code_version
from cowork_assets.store import aside, lease, storage
from cowork_assets.store.raw_files import batch_entries
from cowork_assets.store.registry import REGISTRY, TABLES
from cowork_assets.store.storage import local_root

STATE = "state"


def raw_fingerprint(raw_root: Path, batch: str) -> str:
    """sha256 of every file the batch walk finds (path, size, modification time, inode, permissions) and every entry
    it skips (path, reason): appended lines, a new file, a file made readable or replaced all change it."""
    files, skipped = batch_entries(raw_root, batch)
    stats = [(f.relative_to(raw_root).as_posix(), *_stat(f)) for f in files]
    return hashlib.sha256(orjson.dumps({"files": stats, "skipped": skipped})).hexdigest()


def _stat(path: Path) -> tuple[int, int, int, int]:
    try:
        s = path.stat()
    except OSError:
        return (-1, -1, -1, -1)
    return (s.st_size, s.st_mtime_ns, s.st_ino, s.st_mode)


def settings_fingerprint(content: dict) -> str:
    """sha256 of the settings that shape a batch's outputs and of the code of its assets (runtime.code_versions:
    the source on disk, as Dagster's code versions see it)."""
    code = batch_code_version()
    return hashlib.sha256(orjson.dumps({"settings": content, "code": code}, option=orjson.OPT_SORT_KEYS)).hexdigest()


def seconds_quiet(raw_root: Path, batch: str) -> float:
    """Seconds since anything in the batch folder last changed (a file written, added, removed or renamed)."""
    folder = raw_root / batch
    times = [folder.stat().st_mtime]
    for here, dirs, files in os.walk(folder):
        for name in dirs + files:
            try:
                times.append((Path(here) / name).lstat().st_mtime)
            except OSError:
                continue
    return time.time() - max(times)


# A batch folder whose files' times lie in the future: (its fingerprint, when this process first saw it so).
_AHEAD: dict[tuple[str, str], tuple[str, float]] = {}


def not_ready(raw_root: Path, batch: str, settle_seconds: float, marker: str) -> tuple[str, bool] | None:
    """Why the batch folder is not to be read yet, and whether waiting will do (it is still being written) rather
    than its completion marker being missing; None when it is ready.

    A folder is quiet when nothing in it changed for `settle_seconds`. Files copied from a host with a skewed clock,
    or unpacked from an archive, may have modification times in the future, which say nothing about when they
    were written: such a folder is ready once its content (`raw_fingerprint`) stayed the same for `settle_seconds`
    by this machine's clock, watched from when this process first saw it."""
    if marker and not (raw_root / batch / marker).exists():
        return f"no {marker} file in the folder yet (batch_ready_marker)", False
    if settle_seconds <= 0:
        return None
    quiet = seconds_quiet(raw_root, batch)
    if quiet < -1:  # a modification time ahead of this machine's clock
        fingerprint, key = raw_fingerprint(raw_root, batch), (str(raw_root), batch)
        if _AHEAD.get(key, ("",))[0] != fingerprint:
            _AHEAD[key] = (fingerprint, time.monotonic())
        steady = time.monotonic() - _AHEAD[key][1]
        if steady < settle_seconds:
            return (
                f"its files' modification times are {-quiet:.0f}s in the future (a skewed clock or an unpacked "
                f"archive): it is read once its content is unchanged for {settle_seconds:g}s by this machine's clock",
                True,
            )
        return None
    if quiet < settle_seconds:
        return (
            f"its files changed {quiet:.0f}s ago: it is read once quiet for {settle_seconds:g}s (settle_seconds)",
            True,
        )
    return None


# Where the state lives
def _path(root: str, batch: str, suffix: str = "json") -> str:
    return storage.join(root, STATE, "manifests", f"{batch}.{suffix}")


def per_batch_files(root: str, batch: str) -> dict[str, str]:
    """Every per-batch table's file of the batch, once its run finished: table name -> location."""
    return {t.name: t.committed_file(root, batch) for t in REGISTRY if t.per_batch and t.location == "tables"}


def processed_batches(root: str) -> list[str]:
    """The batches the corpus reads: those with ingest tables or a manifest."""
    tables = storage.list_names(TABLES["trajectories"].folder(root), directories=True)
    manifests = storage.list_names(storage.join(root, STATE, "manifests"))
    return sorted(
        {n.removeprefix("batch=") for n in tables if n.startswith("batch=")}
        | {n.removesuffix(".json") for n in manifests if n.endswith(".json") and not n.endswith(".started.json")}
    )


@contextmanager
def committing(root: str, shared: bool = False) -> Iterator[None]:
    """Exclusive: a batch's commit (`finish`) is under way. `shared`: no commit is under way on this machine while
    the block lists the processed batches and reads their manifests."""
    with lease.file_lock(local_root(root) / ".batches.lock", shared=shared):
        yield


def processed_states(root: str, raw_root: Path, settings: str, deep: bool = True) -> list[BatchState]:
    """The state (`check`) of each batch the corpus reads, as of one moment between batches' commits. In an object
    store the table files of every batch are listed at once (a request per 1,000 files, not one per file)."""
    with committing(root, shared=True):
        listed = storage.files_under(storage.join(root, "tables")) if storage.is_remote(root) else None
        return [check(root, raw_root, b, settings, deep, listed=listed) for b in processed_batches(root)]


def corpus_version(root: str) -> str:
    """Which state of the corpus the tables hold: a digest of each processed batch with the raw files, settings and
    code its manifest says it was processed from (what its tables follow from; not which run wrote them, so a batch
    another machine redid the same way is the same). A table computed across batches notes it, so that what reads
    it can tell whether the corpus changed since."""
    with committing(root, shared=True):
        found = [(b, manifest(root, b) or {}) for b in processed_batches(root)]
    return hashlib.sha256(orjson.dumps([(b, m.get("raw"), m.get("settings")) for b, m in found])).hexdigest()[:16]


# A batch run
def start(
    root: str, batch: str, raw: str, settings: str, run_id: str, waiting: Callable[[str], None] | None = None
) -> None:
    """Ingest begins: what the run reads (the raw files' fingerprint now) and with what settings; its tables are
    written aside until `finish` (after another machine's run of the batch, if one holds it: `waiting`)."""
    aside.begin(root, batch, run_id, waiting)
    payload = {"batch": batch, "raw": raw, "settings": settings, "run_id": run_id}
    storage.write_text_atomic(_path(root, batch, "started.json"), orjson.dumps(payload).decode())


def finish(root: str, batch: str, run_id: str, verdict: dict | None = None) -> dict:
    """Every per-batch table is written: they replace the batch's tables, and the manifest the last one. Returns
    it. (A crash between the two leaves tables that do not match the manifest: damage, and the batch is redone.)
    `verdict`: the checks the run evaluated on the batch and where it ran (`{"checks": {name: {"passed",
    "severity"}}, "instance": ...}`), kept in the manifest so that whoever publishes, on whatever instance or
    machine, judges the batch by them."""
    started = _path(root, batch, "started.json")
    folder = aside.folder(root, batch)
    if folder is None or not storage.exists(started) or orjson.loads(storage.read_bytes(started))["run_id"] != run_id:
        raise RuntimeError(
            f"batch {batch}: its ingest did not run in this run; run process_batch for the batch (every step)"
        )
    begun = orjson.loads(storage.read_bytes(started))
    written = {t.name: t.file(root, batch) for t in REGISTRY if t.per_batch and t.location == "tables"}
    with committing(root):
        for name, final in per_batch_files(root, batch).items():
            if storage.exists(written[name]):
                storage.move_file(written[name], final)
            else:  # not written by this run: not the batch's as it is now
                storage.delete(final)
        aside.end(root, batch)
        files = per_batch_files(root, batch).items()
        tables = {name: _digest(f, info) for name, f in files if (info := storage.file_info(f)) is not None}
        manifest = {**begun, "tables": tables, **({"verdict": verdict} if verdict is not None else {})}
        storage.write_text_atomic(_path(root, batch), orjson.dumps(manifest, option=orjson.OPT_INDENT_2).decode())
        storage.delete(started)
    aside.release(root, batch)
    return manifest


def manifest(root: str, batch: str) -> dict | None:
    try:  # read, not first asked whether it is there: one request to an object store less
        found = orjson.loads(storage.read_bytes(_path(root, batch)))
    except FileNotFoundError:
        return None
    except orjson.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}


def drop(root: str, batch: str) -> None:
    """Remove a batch from the corpus: its tables and its manifest."""
    with committing(root):
        for f in per_batch_files(root, batch).values():
            storage.delete(f.rsplit("/", 1)[0])
        storage.delete(_path(root, batch))
        storage.delete(_path(root, batch, "started.json"))


# Checking a batch
@dataclass(frozen=True)
class BatchState:
    batch: str
    damage: str | None  # its tables are not what its manifest says (or there is none)
    stale: str | None  # its raw files or the settings changed since it was processed
    run_id: str | None
    settings: str | None
    verdict: dict | None = None  # the checks its run evaluated (`finish`); None in a manifest older than verdicts

    @property
    def problem(self) -> str | None:
        return self.damage or self.stale

    @property
    def failed_checks(self) -> dict[str, str] | None:
        """The checks its run failed, `asset:check` -> severity, from its manifest (None: the manifest has none)."""
        if self.verdict is None:
            return None
        checks = self.verdict.get("checks") or {}
        return {name: c.get("severity", "ERROR") for name, c in checks.items() if not c.get("passed")}


def check(
    root: str,
    raw_root: Path,
    batch: str,
    settings: str,
    deep: bool = True,
    raw: str | None = None,
    listed: dict[str, FileInfo] | None = None,
) -> BatchState:
    """The batch's state: its manifest against its table files (`deep`: by digest, else by size) and against the
    raw files (their fingerprint `raw`, computed if not given) and settings now. Raw files are compared only while
    the batch folder exists. `listed`: the table files there are (`storage.files_under`), else each is looked up."""
    found = manifest(root, batch)
    if found is None:
        return BatchState(batch, "no manifest: no run of it finished", None, None, None)
    if not found or not isinstance(found.get("tables"), dict):
        return BatchState(batch, "its manifest is not readable", None, None, None)
    damage = _damage(root, batch, found["tables"], deep, listed)
    stale = None
    if found.get("settings") != settings:
        stale = "it was processed with other settings or code"
    elif (raw_root / batch).is_dir() and found.get("raw") != (raw or raw_fingerprint(raw_root, batch)):
        stale = "its raw files changed since it was processed"
    verdict = found.get("verdict") if isinstance(found.get("verdict"), dict) else None
    return BatchState(batch, damage, stale, found.get("run_id"), found.get("settings"), verdict)


def _damage(root: str, batch: str, recorded: dict, deep: bool, listed: dict[str, FileInfo] | None) -> str | None:
    files = per_batch_files(root, batch)
    for name in sorted(set(files) | set(recorded)):
        location = files.get(name)
        info = None if location is None else listed.get(location) if listed is not None else storage.file_info(location)
        if name not in recorded:
            if info is not None:
                return f"its table {name} was written after its manifest"
            continue
        if info is None:
            return f"its table {name} is missing"
        altered = _digest(files[name], info) != recorded[name] if deep else info.size != recorded[name]["bytes"]
        if altered:
            return f"its table {name} was altered since its run"
    return None


def _digest(location: str, info: FileInfo) -> dict:
    """The file's size and sha256; `info`: its `storage.file_info`."""
    size, sha256 = _file_digest(location, info.size, info.mtime_ns, _inode(location))
    return {"bytes": size, "sha256": sha256}


def _inode(location: str) -> int:
    return 0 if storage.is_remote(location) else os.stat(location).st_ino


@functools.lru_cache(maxsize=4096)
def _file_digest(location: str, size: int, mtime_ns: int | None, inode: int) -> tuple[int, str]:
    """(bytes, sha256) of a file; cached by its size, modification time and inode (files are replaced by rename,
    never edited in place), so the steps of one run that verify the same batches read each file once."""
    digest = hashlib.sha256()
    with storage.open_input(location) as fh:
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    return size, digest.hexdigest()
