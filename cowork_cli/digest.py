"""Content digests of every table and published dataset of a data root: equal digests mean equal rows
(in any order, any file layout), so two runs or two versions of the code can be compared table by table."""

from __future__ import annotations

import hashlib

import polars as pl

from cowork_assets.store.registry import in_warehouse
from cowork_assets.store.storage import plain


def content_digests(root: str) -> dict[str, str]:
    """sha256 of each table's rows: the sorted 64-bit hashes of its rows (columns in name order)."""
    out = {}
    for table in in_warehouse():
        frame = pl.concat([plain(pl.read_parquet(f)) for f in table.sources(root)], how="diagonal_relaxed")
        rows = frame.select(sorted(frame.columns)).hash_rows(seed=0).sort()
        out[table.name] = hashlib.sha256(rows.to_numpy().tobytes()).hexdigest()[:16] + f" ({frame.height} rows)"
    return out
