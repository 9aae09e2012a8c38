"""The table registry: every table and dataset the pipeline writes, once, collected from the stages.

Each stage declares its tables (`store.table.Table`: model, group, partitioning, inputs, description) in its
`schemas.py` as `TABLES`, beside their models; this collects them in pipeline order (`plugins.STAGES`). Every stage,
the asset specs (orchestration/specs.py), the warehouse's views, the content digests and the benchmark look tables
up here; the schema checks and the schema tests are derived from this list. Adding a table is one entry in its
stage's `schemas.py` plus the function that computes it. A misspelt name fails at once: `TABLES["x"]` names the
tables there are.
"""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from cowork_assets.plugins import stage_modules
from cowork_assets.store.table import Table

REGISTRY: tuple[Table, ...] = tuple(t for module in stage_modules("schemas") for t in module.TABLES)


class Registry(dict):
    """Tables by name; a name that is not registered is an error that names the ones there are."""

    def __missing__(self, name: str) -> Table:
        raise KeyError(f"no table {name!r}; the tables are: {', '.join(self)}")


TABLES: dict[str, Table] = Registry((t.name, t) for t in REGISTRY)


def group(name: str) -> dict[str, Table]:
    """The tables of one group (pipeline stage), in registry order."""
    return {t.name: t for t in REGISTRY if t.group == name}


def in_warehouse() -> list[Table]:
    """The tables and published datasets the DuckDB file has a view of (candidates are not queryable)."""
    return [t for t in REGISTRY if t.location != "candidate"]


def published() -> dict[str, Table]:
    """The published datasets, in registry order."""
    return {t.name: t for t in REGISTRY if t.location == "published"}


def batch_chunks(
    root: str, batch: str, table: str = "messages", **sides: list[str] | None
) -> Iterator[dict[str, pl.DataFrame]]:
    """A batch a chunk of whole trajectories at a time: `table`'s rows of the chunk, and, under their names, the
    rows of each per-trajectory side table (read once, with the columns given; None: every column) whose
    trajectory is in the chunk. Memory follows a chunk, not the batch."""
    loaded = {name: TABLES[name].read(root, batch, columns=columns) for name, columns in sides.items()}
    for rows in TABLES[table].chunks(root, batch):
        ids = rows["trajectory_id"].unique().implode()
        yield {table: rows} | {name: frame.filter(pl.col("trajectory_id").is_in(ids)) for name, frame in loaded.items()}
