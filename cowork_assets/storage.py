"""Where tables live on disk, and atomic Parquet writes.

Layout: <data_root>/tables/<table>/batch=<batch>/data.parquet for per-batch tables and
<data_root>/tables/<table>/data.parquet for cross-batch ones. A write goes to a temporary file in
the same folder and is renamed into place, so a reader or a crash only ever sees a whole file.
"""

from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

FILE_NAME = "data.parquet"


def table_dir(data_root: Path, table: str) -> Path:
    return data_root / "tables" / table


def partition_file(data_root: Path, table: str, batch: str | None = None) -> Path:
    base = table_dir(data_root, table)
    return (base / f"batch={batch}" if batch is not None else base) / FILE_NAME


def table_glob(data_root: Path, table: str, partitioned: bool = True) -> str:
    return str(table_dir(data_root, table) / ("batch=*/" if partitioned else "") / FILE_NAME)


def _tmp_path(final: Path) -> Path:
    return final.with_name(f".{final.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


@contextmanager
def atomic_path(final: Path) -> Iterator[Path]:
    """Yield a temporary path beside `final`; rename it into place only if the block succeeds."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_path(final)
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


class ParquetSink:
    """Streams polars frames into one Parquet file with a fixed schema; atomic on commit."""

    def __init__(self, final: Path, schema: pa.Schema):
        self.final, self.schema, self.rows = final, schema, 0
        final.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = _tmp_path(final)
        self._writer = pq.ParquetWriter(self._tmp, schema, compression="zstd")

    def write(self, frame: pl.DataFrame) -> None:
        if frame.height:
            self._writer.write_table(frame.to_arrow().select(self.schema.names).cast(self.schema))
            self.rows += frame.height

    def commit(self) -> None:
        self._writer.close()
        with open(self._tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(self._tmp, self.final)

    def abort(self) -> None:
        self._writer.close()
        self._tmp.unlink(missing_ok=True)


def scan_table(data_root: Path, table: str, partitioned: bool = True) -> pl.LazyFrame:
    return pl.scan_parquet(table_glob(data_root, table, partitioned))


def write_text_atomic(final: Path, text: str) -> Path:
    with atomic_path(final) as tmp:
        tmp.write_text(text)
    return final


def write_parquet_atomic(frame: pl.DataFrame, final: Path, schema: pa.Schema | None = None) -> Path:
    with atomic_path(final) as tmp:
        table = frame.to_arrow()
        if schema is not None:
            table = table.select(schema.names).cast(schema)
        pq.write_table(table, tmp, compression="zstd")
    return final


def iter_trajectory_chunks(path: Path, columns: list[str] | None = None) -> Iterator[pl.DataFrame]:
    """Row groups of a per-trajectory table, re-cut so no trajectory is split across two chunks.

    Tables are written in trajectory order, so rows of one trajectory are contiguous; a trajectory
    that straddles a row-group boundary is carried into the next chunk.
    """
    parquet = pq.ParquetFile(path)
    carry: pl.DataFrame | None = None
    for i in range(parquet.num_row_groups):
        frame = pl.from_arrow(parquet.read_row_group(i, columns=columns))
        if carry is not None:
            frame = pl.concat([carry, frame])
        ids = frame["trajectory_id"]
        start = frame.height - (ids.reverse() != ids[-1]).arg_max() if (ids != ids[-1]).any() else 0
        carry = frame.slice(start)
        if start:
            yield frame.slice(0, start)
    if carry is not None and carry.height:
        yield carry
