"""A table (or dataset) the pipeline writes, and its I/O.

For each: its name, pandera model, group (the pipeline stage it belongs to, a Dagster group), whether it is
partitioned (by batch or by task bucket), where it lives, its description and its inputs (the assets it is computed
from). A table knows its files and how to scan, read and write them (a sink that commits or aborts), locally or in an
object store. Each stage declares its tables in its `schemas.py`, beside their models; the registry
(store/registry.py) collects them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

import pandera.polars as pa
import polars as pl

from cowork_assets.store import aside, storage, versions
from cowork_assets.store.buckets import BUCKETS, consecutive_groups
from cowork_assets.store.models import arrow_schema, polars_schema

# tables: <data_root>/tables/<name>/ (batch=<b>/ or bucket=<k>/data.parquet per part, else data.parquet); candidate: a
# dataset version awaiting its gate (store/versions.py); published: <data_root>/published/<name>/current/.
Location = Literal["tables", "candidate", "published"]
FILE_NAME = "data.parquet"
CORPUS_NOTE = "cowork:corpus"  # in a file's footer: the state of the corpus it was computed from


@dataclass(frozen=True, kw_only=True)  # entries name every field: no bare booleans by position
class Table:
    name: str
    model: type[pa.DataFrameModel]
    group: str
    description: str
    inputs: tuple[str, ...]
    location: Location = "tables"
    # A file per batch (`batch=<b>/`), per task bucket (`bucket=<k>/`, store/buckets.py) or one for the table
    partitioned_by: Literal["batch", "bucket"] | None = None
    also_in_view: tuple[str, ...] = ()  # more files of the table's folder its warehouse view reads

    @property
    def per_batch(self) -> bool:
        return self.partitioned_by == "batch"

    @property
    def per_bucket(self) -> bool:
        return self.partitioned_by == "bucket"

    # Where the rows are
    def folder(self, root: str) -> str:
        return storage.join(root, "tables", self.name)

    def file(self, root: str, part: str | None = None) -> str:
        """The file of a part: a batch's (while this process runs the batch, its file written aside) or a task bucket's;
        or the table's one file."""
        if self.per_batch and (folder := aside.folder(root, part)):
            return storage.join(folder, self.name, FILE_NAME)
        return self.committed_file(root, part)

    def committed_file(self, root: str, part: str | None = None) -> str:
        """Where a part's file is once its run finished (`tables/<name>/batch=<batch>/` or `bucket=<bucket>/`), or the
        table's one file."""
        if self.partitioned_by and part is None:
            raise ValueError(f"{self.name} is written per {self.partitioned_by}: name the {self.partitioned_by}")
        if self.location != "tables":
            raise ValueError(f"{self.name} is a dataset: its files are its version's (`sources`)")
        parts = [f"{self.partitioned_by}={part}"] if self.partitioned_by else []
        return storage.join(self.folder(root), *parts, FILE_NAME)

    def glob(self, root: str) -> str:
        """Every batch's (or bucket's) file of a partitioned table, as one pattern (the table's one file otherwise)."""
        if self.partitioned_by:
            return storage.join(self.folder(root), f"{self.partitioned_by}=*", FILE_NAME)
        return self.committed_file(root)

    def sources(self, root: str) -> list[str]:
        """What holds every row: the parts' files and the extra files beside them that exist, the table's file,
        or the Parquet files of a dataset's current version (a candidate's own, for a candidate)."""
        if self.location == "published":
            return [storage.join(versions.current_path(root, self.name), "*.parquet")]
        if self.location == "candidate":
            return versions.parquet_files(versions.candidate(root, self.dataset))
        extra = [storage.join(self.folder(root), f) for f in self.also_in_view]
        return [self.glob(root), *(f for f in extra if storage.exists(f))]

    @property
    def dataset(self) -> str:
        """The published dataset a candidate becomes (the one computed from it), or this table's name."""
        from cowork_assets.store.registry import REGISTRY  # the registry collects the tables: known once they are

        return next((t.name for t in REGISTRY if t.location == "published" and self.name in t.inputs), self.name)

    # Reading
    def scan(self, root: str, part: str | None = None) -> pl.LazyFrame:
        """A part's rows, or every row (all batches or buckets) when no part is named."""
        return pl.scan_parquet(self.file(root, part) if part is not None else self.sources(root))

    def scan_batches_of(self, root: str, rows: pl.DataFrame) -> pl.LazyFrame:
        """The rows of the batches `rows` names (its `batch` column), one batch's file after another in that order."""
        return pl.scan_parquet([self.file(root, batch) for batch in rows["batch"].unique(maintain_order=True)])

    def read(self, root: str, part: str | None = None, columns: list[str] | None = None) -> pl.DataFrame:
        """A part's rows, or every row of the table."""
        if part is None and self.partitioned_by:
            return self.scan(root).select(columns or pl.all()).collect()
        return pl.read_parquet(self.file(root, part), columns=columns)

    def rows(self, root: str, part: str | None = None) -> int:
        """Rows of a part, or of the whole table, from the files' footers."""
        return storage.parquet_rows(self.file(root, part) if part is not None else self.sources(root))

    def rows_of_other_batches(self, root: str, batch: str) -> int:
        """Rows of every other batch's file: the one a run of it is writing aside if there is one (batches run side
        by side), else its file in `tables/`. From the files' footers, each read once while the file is unchanged (a
        run over many batches would read O(batches) footers for each); a file moved or removed meanwhile counts as
        its other copy, or as none."""
        committed = {n.removeprefix("batch=") for n in storage.list_names(self.folder(root), directories=True)}
        in_progress = aside.in_progress(root)
        copies = [
            [
                *(storage.join(a, self.name, FILE_NAME) for a in in_progress.get(other, [])),
                self.committed_file(root, other),
            ]
            for other in sorted((committed | set(in_progress)) - {batch})
        ]
        there = storage.stamps([f for files in copies for f in files])
        return sum(_first_rows(files, there) for files in copies)

    def chunks(self, root: str, batch: str, columns: list[str] | None = None) -> Iterator[pl.DataFrame]:
        """A per-trajectory table of a batch, whole trajectories a chunk at a time (`storage.trajectory_chunks`)."""
        return storage.trajectory_chunks(self.file(root, batch), columns)

    def read_keyed(self, root: str, keys: pl.DataFrame, key: str) -> pl.DataFrame:
        """The rows whose (batch, `key`) is in `keys`, in their order, read from the files of their batches alone."""
        return storage.read_keyed_rows(root, self, keys, key)

    def first_copies(self, root: str, key: str) -> Iterator[pl.DataFrame]:
        """The rows of each distinct `key` in the first batch that has it, a group of batches' rows at a time: each
        batch holds its own copy of a task's package, and a cross-batch step must not hold every batch's at once."""
        first = self.scan(root).select("batch", key).collect().unique(key, keep="first", maintain_order=True)
        return (self.read_keyed(root, keys, key) for keys in batch_groups(first))

    def read_current(self, root: str, corpus: str, parts: Iterable[str] = BUCKETS) -> pl.DataFrame:
        """The rows of `parts` (task buckets), each computed from the corpus as it is now (`corpus`:
        `batch_state.corpus_version`): a bucket computed from another state of it, or never, is an error that
        names it. Rows a bucket kept from before a batch was added, redone or dropped would select wrongly."""
        rows, stale = self.read_noted(root, corpus, parts)
        if stale:
            raise RuntimeError(
                f"{self.name}: task bucket(s) {', '.join(stale)} were not computed from the corpus as it is now (a "
                "batch was added, redone or dropped since, or they never were); materialize every bucket of it "
                "(the refresh_corpus job does) before what reads it"
            )
        return rows

    def read_noted(self, root: str, corpus: str, parts: Iterable[str] = BUCKETS) -> tuple[pl.DataFrame, list[str]]:
        """The rows of `parts` (task buckets), and those of them not computed from the corpus as it is now
        (`corpus`), or never computed: each file's note and rows from one read of it, so that the rows are those the
        note describes even while a refresh replaces the file."""
        frames, stale = [], []
        for part in parts:
            found = storage.read_noted_parquet(self.committed_file(root, part))
            if found is None or found[0].get(CORPUS_NOTE) != corpus:
                stale.append(part)
            else:
                frames.append(found[1])
        return (pl.concat(frames) if frames else pl.DataFrame(schema=polars_schema(self.model))), stale

    # Writing
    def write(self, frame: pl.DataFrame, root: str, part: str | None = None, corpus: str | None = None) -> str:
        """Write the table's (or a part's) file atomically, with the model's schema, noting the state of the corpus it
        was computed from (`corpus`, for `read_current`); its location."""
        notes = {CORPUS_NOTE: corpus} if corpus else None
        return storage.write_parquet_atomic(frame, self.file(root, part), arrow_schema(self.model), notes)

    def sink(self, root: str, part: str | None = None) -> storage.ParquetSink:
        """A sink for the table's (or a part's) file: frames streamed in, committed whole or aborted (as a
        context manager: committed when the block ends, aborted when it raises)."""
        return storage.ParquetSink(self.file(root, part), arrow_schema(self.model))


# Runs of small batches a cross-batch step works together. Well below a day's drop: a batch of thousands of runs is
# worked alone, as is every batch of a large corpus, which holds no more at once than it did batch by batch.
SMALL_BATCH_RUNS = 5_000


def batch_groups(rows: pl.DataFrame, max_runs: int = SMALL_BATCH_RUNS) -> Iterator[pl.DataFrame]:
    """`rows` (with a `batch` column) a group of whole batches at a time, in order of first appearance: as many
    batches as come to at most `max_runs` rows (a larger batch alone), each group its batches' rows one batch after
    another. A cross-batch step that builds its rows a batch at a time pays its per-pass cost once for many small
    batches, not once for each."""
    parts = rows.partition_by("batch", maintain_order=True, as_dict=True)
    for group in consecutive_groups(((batch, part.height) for (batch,), part in parts.items()), max_runs):
        yield pl.concat([parts[(batch,)] for batch in group])


def _first_rows(files: list[str], there: dict[str, tuple[int, int]]) -> int:
    """Rows of the first of `files` there is (`there`: their stamps; none: 0)."""
    found = (storage.footer_rows(f, there[f]) for f in files if f in there)
    return next((rows for rows in found if rows is not None), 0)
