"""Staging and atomic, versioned publication of a dataset.

A candidate is written to `<data_root>/staging/<dataset>/<digest>/` (a temporary folder renamed into
place) and named in `staging/<dataset>/CANDIDATE`. Publishing renames the candidate folder to
`<data_root>/published/<dataset>/v0007-<digest>/`, then switches `published/<dataset>/CURRENT` (a
file) and `published/<dataset>/current` (a symlink) to it, each with an atomic rename. A trainer
reading `current/` sees the old version or the new one, never a mix; old versions stay readable.
Publishing content identical to an existing version re-points to that version instead of copying.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from cowork_assets.storage import write_text_atomic


@dataclass(frozen=True)
class Publication:
    dataset: str
    version: str
    previous: str | None
    path: Path
    new: bool


def portable(t: pa.DataType) -> pa.DataType:
    """Plain string/list types instead of Arrow's large ones, which every reader (HF datasets, pandas) maps simply."""
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(portable(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, portable(f.type), f.nullable) for f in t])
    return t


def stage(data_root: Path, dataset: str, files: dict[str, pl.DataFrame], schemas: dict[str, pa.Schema]) -> Path:
    """Write a candidate's Parquet files; returns its folder (named by the content digest)."""
    root = data_root / "staging" / dataset
    tmp = root / f".tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    try:
        digest = hashlib.sha256()
        for name in sorted(files):
            path = tmp / f"{name}.parquet"
            schema = pa.schema([pa.field(f.name, portable(f.type), f.nullable) for f in schemas[name]])
            table = files[name].to_arrow().select(schema.names).cast(schema)
            pq.write_table(table, path, compression="zstd")
            digest.update(name.encode() + path.read_bytes())
        final = root / digest.hexdigest()[:12]
        if final.exists():
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    write_text_atomic(root / "CANDIDATE", final.name)
    return final


GATE_PASSED = "GATE_PASSED"


def mark_gated(folder: Path) -> None:
    """Record that this candidate passed its quality gate; only such candidates can be published."""
    write_text_atomic(folder / GATE_PASSED, "passed\n")


def candidate(data_root: Path, dataset: str) -> Path:
    root = data_root / "staging" / dataset
    pointer = root / "CANDIDATE"
    if not pointer.exists():
        raise FileNotFoundError(f"no staged candidate for {dataset}")
    return root / pointer.read_text().strip()


def current(data_root: Path, dataset: str) -> str | None:
    pointer = data_root / "published" / dataset / "CURRENT"
    return pointer.read_text().strip() if pointer.exists() else None


def current_path(data_root: Path, dataset: str) -> Path:
    version = current(data_root, dataset)
    if version is None:
        raise FileNotFoundError(f"{dataset} has not been published under {data_root}")
    return data_root / "published" / dataset / version


def publish(data_root: Path, dataset: str,
            extra_files: Callable[[str, str | None], dict[str, str]] | None = None) -> Publication:
    """Publish the staged candidate as the current version. `extra_files(version, previous)` returns text
    files (such as the card) written into the version before it becomes visible."""
    staged = candidate(data_root, dataset)
    if not (staged / GATE_PASSED).exists():
        raise RuntimeError(f"{dataset} candidate {staged.name} has not passed its quality gate; not publishing it")
    root = data_root / "published" / dataset
    root.mkdir(parents=True, exist_ok=True)
    previous = current(data_root, dataset)
    existing = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name.startswith("v"))
    version = next((v for v in existing if v.endswith(staged.name)), None)
    new = version is None
    if new:
        version = f"v{len(existing) + 1:04d}-{staged.name}"
        for name, text in (extra_files(version, previous) if extra_files else {}).items():
            (staged / name).write_text(text)
        (staged / GATE_PASSED).unlink()
        os.replace(staged, root / version)
    link = root / f".current.{uuid.uuid4().hex[:8]}"
    link.symlink_to(version)
    os.replace(link, root / "current")
    write_text_atomic(root / "CURRENT", version)
    return Publication(dataset, version, previous if previous != version else None, root / version, new)
