"""Content digests of every table and published dataset of a data root: equal digests mean equal rows
(in any order, any file layout), so two runs or two versions of the code can be compared table by table."""

from __future__ import annotations

import hashlib

import polars as pl

from cowork_assets.datasets.publish import current_path
from cowork_assets.store.registry import Table, in_warehouse
from cowork_assets.store.storage import exists, join, partition_file, plain, table_glob


def _files(root: str, table: Table) -> list[str]:
    if table.location == "published":
        return [join(current_path(root, table.name), "*.parquet")]
    if not table.per_batch:
        return [partition_file(root, table.name)]
    extra = [join(root, "tables", table.name, f) for f in table.also_in_view]
    return [table_glob(root, table.name), *(f for f in extra if exists(f))]


def content_digests(root: str) -> dict[str, str]:
    """sha256 of each table's rows: the sorted 64-bit hashes of its rows (columns in name order)."""
    out = {}
    for table in in_warehouse():
        frame = pl.concat([plain(pl.read_parquet(f)) for f in _files(root, table)], how="diagonal_relaxed")
        rows = frame.select(sorted(frame.columns)).hash_rows(seed=0).sort()
        out[table.name] = hashlib.sha256(rows.to_numpy().tobytes()).hexdigest()[:16] + f" ({frame.height} rows)"
    return out
