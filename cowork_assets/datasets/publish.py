"""Staging and atomic, versioned publication of a dataset.

A candidate is written to `<data_root>/candidates/<dataset>/<digest>/` and named in
`candidates/<dataset>/CANDIDATE` (store/versions.py says where). Publishing moves the candidate folder to
`<data_root>/published/<dataset>/v0007-<digest>/`, then switches `published/<dataset>/CURRENT` (a
one-line file, written atomically) to it, and on local disk also the `current` symlink. A trainer
reading the current version sees the old one or the new one, never a mix; old versions stay
readable. Publishing content identical to an existing version re-points to that version.
The same code publishes into an object store: a version is visible only once CURRENT names it.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa

from cowork_assets.store.storage import (
    ParquetSink,
    delete,
    exists,
    is_remote,
    join,
    list_names,
    move_folder,
    open_input,
    parquet_rows,
    write_text_atomic,
)
from cowork_assets.store.versions import (
    candidate,
    candidates_folder,
    current,
    parquet_files,
    published_folder,
)


@dataclass(frozen=True)
class Publication:
    dataset: str
    version: str
    previous: str | None
    path: str
    new: bool


def portable(t: pa.DataType, json: frozenset[str] = frozenset(), path: str = "") -> pa.DataType:
    """Plain string/list types instead of Arrow's large ones, which every reader (HF datasets, pandas) maps simply;
    the string fields at the dotted paths in `json` (list levels do not count) as Arrow's JSON extension type."""
    if path in json:
        return pa.json_()
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(portable(t.value_type, json, path))
    if pa.types.is_struct(t):
        return pa.struct(
            [pa.field(f.name, portable(f.type, json, f"{path}.{f.name}".lstrip(".")), f.nullable) for f in t]
        )
    return t


def file_schema(schema: pa.Schema, json: frozenset[str] = frozenset()) -> pa.Schema:
    """The schema a published file is written with: `portable` types, JSON fields marked (see `portable`)."""
    return pa.schema([pa.field(f.name, portable(f.type, json, f.name), f.nullable) for f in schema])


def write_candidate(
    data_root: str, dataset: str, files: dict[str, pl.DataFrame | Iterable[pl.DataFrame]], schemas: dict[str, pa.Schema]
) -> str:
    """Write a candidate's Parquet files, each a frame or its parts in order (a candidate larger than memory
    is written a part at a time) with its `file_schema`; returns its folder, named by the content digest of
    the files."""
    root = candidates_folder(data_root, dataset)
    sinks = {}
    try:
        for name in sorted(files):
            sinks[name] = sink = ParquetSink(join(root, f"{name}.parquet"), schemas[name], compression="zstd")
            for part in [files[name]] if isinstance(files[name], pl.DataFrame) else files[name]:
                sink.write(part.rechunk())  # pages follow a column's chunks: the digest must follow only content
        final = join(root, content_digest({name: str(sink.written()) for name, sink in sinks.items()}))
        # Files are placed one by one; the folder counts as the candidate only once CANDIDATE names it.
        for name, sink in sinks.items():
            if not exists(join(final, f"{name}.parquet")):
                sink.commit(join(final, f"{name}.parquet"))
    finally:
        for sink in sinks.values():
            sink.abort()
    write_text_atomic(join(root, "CANDIDATE"), final.rsplit("/", 1)[-1])
    return final


def content_digest(files: dict[str, str]) -> str:
    """What names a version: the sha256 of its Parquet files (name, then bytes, in name order), 12 hex digits."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode())
        with open_input(files[name]) as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()[:12]


def intact(folder: str) -> bool:
    """Whether a version's Parquet files are those it was published with (their digest is in its name)."""
    files = {f.rsplit("/", 1)[-1].removesuffix(".parquet"): f for f in parquet_files(folder)}
    return bool(files) and folder.endswith(content_digest(files))


GATE_PASSED = "GATE_PASSED"


def mark_gated(folder: str) -> None:
    """Record that this candidate passed its quality gate; only such candidates can be published."""
    write_text_atomic(join(folder, GATE_PASSED), "passed\n")


def current_rows(data_root: str, dataset: str) -> tuple[str, int] | None:
    """(the current version, its rows), or None when the dataset has no (readable) current version."""
    version = current(data_root, dataset, strict=False)
    if version is None:
        return None
    return version, sum(parquet_rows(f) for f in parquet_files(join(published_folder(data_root, dataset), version)))


def shrink_refused(data_root: str, dataset: str, rows: int, max_shrink: float) -> str | None:
    """Why a candidate of `rows` rows may not replace the current version (it lost more than `max_shrink` of its
    rows, or all of them), or None."""
    now = current_rows(data_root, dataset)
    if now is None or now[1] == 0 or max_shrink >= 1.0 or rows >= now[1] * (1 - max_shrink):
        return None
    lost = 1 - rows / now[1]
    return (
        f"the candidate has {rows} rows against {now[1]} in the current version {now[0]} ({lost:.0%} fewer), more "
        f"than max_shrink={max_shrink:g} allows: if that is right (a narrower selection, a holdout), set "
        "max_shrink=1 for this run"
    )


def publish(
    data_root: str, dataset: str, extra_files: Callable[[str, str | None], dict[str, str]] | None = None
) -> Publication:
    """Publish the candidate as the current version. `extra_files(version, previous)` returns text
    files (such as the card) written into the version before it becomes visible."""
    folder = candidate(data_root, dataset)
    digest = folder.rsplit("/", 1)[-1]
    if not exists(join(folder, GATE_PASSED)):
        raise RuntimeError(f"{dataset} candidate {digest} has not passed its quality gate; not publishing it")
    root = published_folder(data_root, dataset)
    previous = current(data_root, dataset, strict=False)  # a damaged pointer is replaced, not followed
    existing = [v for v in list_names(root, directories=True) if v.startswith("v")]
    # The same content published before is re-pointed to, unless that version was damaged since.
    version = next((v for v in existing if v.endswith(digest) and intact(join(root, v))), None)
    new = version is None
    if new:
        version = f"v{len(existing) + 1:04d}-{digest}"
        for name, text in (extra_files(version, previous) if extra_files else {}).items():
            write_text_atomic(join(folder, name), text)
        delete(join(folder, GATE_PASSED))
        if not is_remote(root):
            Path(root).mkdir(parents=True, exist_ok=True)
        move_folder(folder, join(root, version))
    if not is_remote(root):  # a `current` symlink for local readers; object stores have only CURRENT
        link = Path(root) / f".current.{uuid.uuid4().hex[:8]}"
        link.symlink_to(version)
        os.replace(link, Path(root) / "current")
    write_text_atomic(join(root, "CURRENT"), version)
    return Publication(dataset, version, previous if previous != version else None, join(root, version), new)
