"""Where tables live, on local disk or in an object store, and atomic writes.

The data root is a local folder or an object-store URI (`s3://bucket/prefix`). Locations are strings
(absolute paths locally, URIs remotely), which polars, pyarrow and DuckDB all read; object-store
credentials and endpoint come from the standard AWS environment (`AWS_ENDPOINT_URL`, ...).

Layout: <root>/tables/<table>/batch=<batch>/data.parquet for per-batch tables and
<root>/tables/<table>/data.parquet for cross-batch ones. Every write goes to a local temporary file
first; it is then renamed into place (local disk) or uploaded in one go (an object store shows an
object only once its upload completes), so a reader or a crash only ever sees a whole file.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from cowork_assets.runtime import scratch

_LOCAL = pafs.LocalFileSystem()


def is_remote(location: str | Path) -> bool:
    return "://" in str(location)


def normalize_root(root: str | Path) -> str:
    """An absolute local path (`file://` URIs included), or the URI without a trailing slash."""
    root = str(root).removeprefix("file://")
    return root.rstrip("/") if is_remote(root) else str(Path(root).expanduser().resolve())


def join(location: str | Path, *parts: str) -> str:
    return "/".join([str(location).rstrip("/"), *parts])


@functools.cache
def _remote_filesystem(scheme_and_bucket: str) -> pafs.FileSystem:
    return pafs.FileSystem.from_uri(scheme_and_bucket)[0]


def filesystem(location: str | Path) -> tuple[pafs.FileSystem, str]:
    """(pyarrow filesystem, path within it) for a location."""
    location = str(location)
    if not is_remote(location):
        return _LOCAL, location
    scheme, rest = location.split("://", 1)
    return _remote_filesystem(f"{scheme}://{rest.split('/', 1)[0]}"), rest


def check_root(root: str) -> None:
    """Fail early, with a plain message, when an object-store data root cannot be reached."""
    if not is_remote(root):
        return
    try:
        fs, path = filesystem(root)
        found = fs.get_file_info(path.split("/", 1)[0]).type != pafs.FileType.NotFound
    except OSError as exc:
        raise ConnectionError(f"cannot reach the data root {root}: {str(exc).splitlines()[0]}") from None
    if not found:
        raise FileNotFoundError(f"the bucket of the data root {root} does not exist (create it first)")


def exists(location: str | Path) -> bool:
    fs, path = filesystem(location)
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def file_info(location: str | Path) -> pafs.FileInfo | None:
    """The size and modification time of a file, None when there is no file there: whether it exists and what it
    is in one request to an object store."""
    fs, path = filesystem(location)
    info = fs.get_file_info(path)
    return info if info.type == pafs.FileType.File else None


def _everything_under(location: str) -> tuple[str, list[pafs.FileInfo]]:
    """(the folder's path in its filesystem, what it holds at any depth): one listing (in an object store a request
    per 1,000 files, where `file_info` asks once for each; its folders are those that hold a file)."""
    fs, path = filesystem(location)
    return path, fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))


def files_under(location: str) -> dict[str, pafs.FileInfo]:
    """Every file under a folder (at any depth), by location, with its size and modification time: one listing."""
    path, found = _everything_under(location)
    scheme = location[: len(location) - len(path)]  # what the filesystem's own paths lack ("s3://"; "" locally)
    return {scheme + info.path: info for info in found if info.type == pafs.FileType.File}


def folders_under(location: str, depth: int) -> list[str]:
    """Sorted paths ("a/b" for `depth` 2), relative to a folder, of the folders `depth` levels below it: one listing."""
    path, found = _everything_under(location)
    below = (i.path[len(path) :].strip("/") for i in found if i.type == pafs.FileType.Directory)
    return sorted(folder for folder in below if folder.count("/") == depth - 1)


def read_bytes(location: str | Path) -> bytes:
    with open_input(location) as fh:
        return fh.read()


def open_input(location: str | Path):
    """A file opened for streamed reading (a context manager), locally or in an object store."""
    fs, path = filesystem(location)
    return fs.open_input_stream(path)


def read_text(location: str | Path) -> str:
    return read_bytes(location).decode()


def list_names(location: str | Path, directories: bool = False) -> list[str]:
    """Sorted names of the files (or folders) directly in a folder; empty when it does not exist."""
    fs, path = filesystem(location)
    wanted = pafs.FileType.Directory if directories else pafs.FileType.File
    infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return sorted(i.base_name for i in infos if i.type == wanted)


def delete(location: str | Path) -> None:
    """Delete a file or a folder tree; nothing if absent."""
    fs, path = filesystem(location)
    kind = fs.get_file_info(path).type
    if kind == pafs.FileType.Directory:
        fs.delete_dir(path)
    elif kind == pafs.FileType.File:
        fs.delete_file(path)


def move_file(source: str, target: str) -> None:
    """Rename a file over `target` (atomic on local disk; copy then delete in an object store)."""
    if not is_remote(source):
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)
        return
    fs, src = filesystem(source)
    fs.move(src, filesystem(target)[1])


def move_folder(source: str, target: str) -> None:
    """Rename a folder (atomic on local disk); copy then delete in an object store, which has no folders."""
    if not is_remote(source):
        os.replace(source, target)
        return
    fs, src = filesystem(source)
    pafs.copy_files(src, filesystem(target)[1], source_filesystem=fs, destination_filesystem=fs)
    fs.delete_dir(src)


def read_keyed_rows(root: str | Path, table, keys: pl.DataFrame, key: str) -> pl.DataFrame:
    """The rows of a per-batch `table` (store.table.Table) whose (batch, `key`) is in `keys`, in the order of `keys`,
    read from the files of the batches `keys` names alone: a cross-batch step that needs a few wide rows (one task
    package per task among many batches' copies) takes them a group of batches at a time, never every batch's."""
    if keys.is_empty():
        return table.scan(root).head(0).collect()
    wanted = keys.select("batch", key)
    found = (
        table.scan_batches_of(root, wanted)
        .join(wanted.lazy().unique(), on=["batch", key], how="semi", maintain_order="left")
        .collect()
    )
    return wanted.join(found, on=["batch", key], how="left", maintain_order="left")


def _scratch(final: str) -> Path:
    """A local temporary file for `final`: beside it on local disk (so the rename is atomic), else in the
    run's scratch folder."""
    name = f".{final.rsplit('/', 1)[-1]}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    if is_remote(final):
        return Path(scratch.folder() or tempfile.gettempdir()) / name
    Path(final).parent.mkdir(parents=True, exist_ok=True)
    return Path(final).with_name(name)


def _place(tmp: Path, final: str) -> None:
    """Make a complete temporary file the file at `final`."""
    if is_remote(final):
        fs, path = filesystem(final)
        pafs.copy_files(str(tmp), path, source_filesystem=_LOCAL, destination_filesystem=fs)
    else:
        target = Path(final)
        if target.is_symlink() or target.exists() and not target.is_file():  # a link, device, FIFO or folder
            raise FileExistsError(f"{final} is not a regular file: an atomic write never replaces it")
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, final)


@contextmanager
def atomic_path(final: str | Path) -> Iterator[Path]:
    """Yield a local temporary path; it becomes `final` only if the block succeeds."""
    tmp = _scratch(str(final))
    try:
        yield tmp
        _place(tmp, str(final))
    finally:
        tmp.unlink(missing_ok=True)


# The working tables, each read back several times by later steps: lz4 decompresses faster than
# zstd, for somewhat larger files; the published datasets stay zstd. No dictionary pages: the tables are
# mostly long, distinct text, which a dictionary does not shrink and which pyarrow then reads back slower.
PARQUET_OPTIONS = {"compression": "lz4", "use_dictionary": False}


class ParquetSink:
    """Streams polars frames into one Parquet file with a fixed schema; atomic on commit. `options`
    override the working tables' `PARQUET_OPTIONS`."""

    def __init__(self, final: str, schema: pa.Schema, **options):
        self.final, self.schema, self.rows = final, schema, 0
        self._tmp = _scratch(final)
        self._writer = pq.ParquetWriter(self._tmp, schema, **(PARQUET_OPTIONS | options))

    def write(self, frame: pl.DataFrame) -> None:
        if frame.height:
            self._writer.write_table(_arrow(frame, self.schema))
            self.rows += frame.height

    def written(self) -> Path:
        """The complete temporary file (no more writes), to read before `commit`."""
        self._close()
        return self._tmp

    def commit(self, final: str | None = None) -> None:
        """Make the file `final` (by default the one given at the start)."""
        self._close()
        _place(self._tmp, final or self.final)

    def abort(self) -> None:
        self._close()
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> ParquetSink:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        """Commit when the block ends, abort when it raises (a committed sink's abort changes nothing)."""
        if kind is None:
            self.commit()
        self.abort()

    def _close(self) -> None:
        if self._writer.is_open:
            self._writer.close()


class ArrowScratch:
    """Frames appended to an uncompressed Arrow file, a temporary one beside `final`, to be read back once:
    written and read once, such data is cheaper without compression than in a Parquet scratch file. The file
    is removed by `remove`, or by the next run's sweep."""

    def __init__(self, final: str, schema: pa.Schema):
        self.schema, self.path = schema, _scratch(final)
        # Buffered: unbuffered, each of a part's many small Arrow buffers would be a write call.
        self._file = pa.BufferedOutputStream(pa.OSFile(str(self.path), "wb"), 1 << 20)
        self._writer = pa.ipc.new_file(self._file, schema)

    def write(self, frame: pl.DataFrame) -> None:
        if frame.height:
            self._writer.write_table(_arrow(frame, self.schema))

    def scan(self) -> pl.LazyFrame:
        """Everything written, memory-mapped (no more writes)."""
        self._close()
        return pl.scan_ipc(self.path)

    def remove(self) -> None:
        self._close()
        self.path.unlink(missing_ok=True)

    def _close(self) -> None:
        if not self._file.closed:
            self._writer.close()
            self._file.close()


class PartSpill:
    """Frames routed by the value of their `by` column to one scratch Arrow file per value, each read back once:
    a cross-batch step reads its input a group of batches at a time and then works on one part at a time. The files are
    removed as they are read, and all of them when the spill closes (as a context manager)."""

    def __init__(self, near: str, schema: pa.Schema, by: str):
        self.near, self.schema, self.by = near, schema, by
        self._parts: dict[str, ArrowScratch] = {}

    def write(self, frame: pl.DataFrame) -> None:
        for (value,), part in frame.partition_by(self.by, as_dict=True, include_key=False).items():
            if value not in self._parts:
                self._parts[value] = ArrowScratch(self.near, self.schema)
            self._parts[value].write(part)

    def written(self) -> list:
        """The values with rows not yet taken."""
        return list(self._parts)

    def take(self, value) -> pl.DataFrame:
        """The rows written with `value` (none: an empty frame of the schema); its file goes."""
        part = self._parts.pop(value, None)
        if part is None:
            return pl.from_arrow(self.schema.empty_table())
        try:
            return part.scan().collect()
        finally:
            part.remove()

    def __enter__(self) -> PartSpill:
        return self

    def __exit__(self, *exc) -> None:
        for part in self._parts.values():
            part.remove()


class SortedSpill:
    """Frames written in any order, read back sorted by a key: a cross-batch step builds its rows a batch
    at a time and writes them in one order without holding them all. Rows are routed as they are written
    to buckets of about `bucket_rows` rows each, by ranges of the key taken from `keys` (every row's key,
    known in advance), spilled as parts (`PartSpill`); reading sorts one bucket at a time."""

    def __init__(self, near: str, schema: pa.Schema, key: pl.Expr, keys: pl.Series, bucket_rows: int = 5_000):
        self.key, self.rows = key, 0
        ordered = keys.sort()
        self._bounds = ordered.gather_every(bucket_rows, offset=bucket_rows).unique(maintain_order=True)
        self._buckets = PartSpill(near, schema, "_bucket")

    def write(self, frame: pl.DataFrame) -> None:
        bucket = self._bounds.search_sorted(frame.select(self.key.cast(self._bounds.dtype)).to_series(), side="right")
        self._buckets.write(frame.with_columns(_bucket=bucket))
        self.rows += frame.height

    def sorted(self, *by: str | pl.Expr) -> Iterator[pl.DataFrame]:
        """Every row written, a bucket at a time, sorted by the key and then `by`; the scratch files go as
        they are read (and all of them if reading stops early)."""
        with self._buckets:
            for b in sorted(self._buckets.written()):
                yield self._buckets.take(b).sort(self.key, *by)


def write_text_atomic(final: str | Path, text: str) -> str:
    with atomic_path(final) as tmp:
        tmp.write_text(text)
    return str(final)


def write_parquet_atomic(
    frame: pl.DataFrame, final: str, schema: pa.Schema | None = None, notes: dict[str, str] | None = None
) -> str:
    """Write `frame` as `final` at once (with exactly `schema`'s columns), with `notes` in the file's footer."""
    table = frame.to_arrow() if schema is None else _arrow(frame, schema)
    if notes:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **notes})
    with atomic_path(final) as tmp:
        pq.write_table(table, tmp, **PARQUET_OPTIONS)
    return final


def read_noted_parquet(location: str) -> tuple[dict[str, str], pl.DataFrame] | None:
    """The notes `write_parquet_atomic` put in a Parquet file's footer (its key-value metadata) and its rows, of one
    and the same file (it may be replaced meanwhile) from one read of it (two requests to an object store, not two
    for the footer and as many again for the rows); None when there is no file."""
    try:
        data = pa.py_buffer(read_bytes(location))
    except FileNotFoundError:
        return None
    notes = pq.read_schema(pa.BufferReader(data)).metadata or {}
    return {k.decode(): v.decode() for k, v in notes.items()}, pl.read_parquet(pa.BufferReader(data))


def _arrow(frame: pl.DataFrame, schema: pa.Schema) -> pa.Table:
    """A frame as an Arrow table with exactly `schema`'s columns, in its order and types."""
    return frame.to_arrow().select(schema.names).cast(schema)


def _has_extension(dtype: pl.DataType) -> bool:
    if isinstance(dtype, pl.Extension):
        return True
    if isinstance(dtype, pl.List | pl.Array):
        return _has_extension(dtype.inner)
    return isinstance(dtype, pl.Struct) and any(_has_extension(f.dtype) for f in dtype.fields)


def _storage_type(t: pa.DataType) -> pa.DataType:
    if isinstance(t, pa.BaseExtensionType):
        return t.storage_type
    if pa.types.is_list(t):
        return pa.list_(_storage_type(t.value_type))
    if pa.types.is_large_list(t):
        return pa.large_list(_storage_type(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _storage_type(f.type), f.nullable) for f in t])
    return t


def plain(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with extension columns (the published datasets' JSON fields) as their storage (JSON strings),
    the types the pipeline's own code and models use."""
    if not any(_has_extension(dtype) for dtype in frame.schema.values()):
        return frame
    table = frame.to_arrow()
    return pl.from_arrow(table.cast(pa.schema([pa.field(f.name, _storage_type(f.type)) for f in table.schema])))


def parquet_rows(location: str | list[str]) -> int:
    """Rows of Parquet files (a file, a glob or a list of them), from their footers."""
    return pl.scan_parquet(location).select(pl.len()).collect().item() if location else 0


# (file, size, modification time in ns) -> its rows: the footers of files that have not changed are read once a process.
_FOOTER_ROWS: dict[tuple[str, int, int], int] = {}
_FOOTER_ROWS_KEPT = 100_000


def stamps(files: list[str]) -> dict[str, tuple[int, int]]:
    """(size, modification time in ns) of each of `files` (all in one filesystem) that is there: a stat each, or
    a listing request each in an object store; a footer read costs several."""
    if not files:
        return {}
    fs = filesystem(files[0])[0]
    infos = fs.get_file_info([filesystem(f)[1] for f in files])
    return {f: (i.size, i.mtime_ns) for f, i in zip(files, infos) if i.type == pafs.FileType.File}


def footer_rows(file: str, stamp: tuple[int, int]) -> int | None:
    """Rows of a Parquet file from its footer, read once while it keeps its `stamp` (`stamps`: a file is only ever
    replaced whole, and a new one differs in size or time); None when it is gone. For figures shown, not for
    decisions: a rewrite of the same size within the filesystem's time resolution would read as the old file."""
    key = (file, *stamp)
    if key not in _FOOTER_ROWS:
        fs, path = filesystem(file)
        try:
            with fs.open_input_file(path) as f:
                rows = pq.read_metadata(f).num_rows
        except (OSError, pa.ArrowException):  # gone since it was stamped, or not Parquet: as none
            return None
        if len(_FOOTER_ROWS) >= _FOOTER_ROWS_KEPT:
            _FOOTER_ROWS.clear()
        _FOOTER_ROWS[key] = rows
    return _FOOTER_ROWS[key]


def iter_chunks(location: str, columns: list[str] | None = None, rows: int = 25_000) -> Iterator[pl.DataFrame]:
    """A Parquet file `rows` rows at a time, wherever it lives (polars' streaming reader: a third of
    the time pyarrow's row-group reads take), JSON fields as strings (`plain`)."""
    scan = pl.scan_parquet(location)
    for chunk in (scan.select(columns) if columns else scan).collect_batches(chunk_size=rows):
        yield plain(chunk)


def trajectory_chunks(location: str, columns: list[str] | None = None, rows: int = 25_000) -> Iterator[pl.DataFrame]:
    """Chunks of a per-trajectory table, re-cut so no trajectory is split across two chunks.

    Tables are written in trajectory order, so rows of one trajectory are contiguous. A chunk read is held until
    the next one comes: then all but its last trajectory are yielded, and that one is carried into the next. The
    last chunk is yielded whole, so a table of one chunk is one chunk (each costs every stage its fixed work).
    """
    held: pl.DataFrame | None = None
    for frame in iter_chunks(location, columns, rows):
        if held is None or held.is_empty():
            held = frame
            continue
        ids = held["trajectory_id"]
        start = held.height - (ids.reverse() != ids[-1]).arg_max() if (ids != ids[-1]).any() else 0
        if start:
            yield held.slice(0, start)
        held = pl.concat([held.slice(start), frame])
    if held is not None and held.height:
        yield held


def local_root(data_root: str) -> Path:
    """Local folder for what must be a local file (the DuckDB file, locks): the data root itself, or for
    an object-store root a folder under COWORK_WORK_DIR (default ~/.cache/cowork-curate) named after it."""
    root = normalize_root(data_root)
    if not is_remote(root):
        return Path(root)
    base = Path(os.environ.get("COWORK_WORK_DIR", "~/.cache/cowork-curate")).expanduser().resolve()
    return base / re.sub(r"[^A-Za-z0-9._-]+", "_", root)
