"""An independent recount of a batch's raw records, for `records_accounted_for`.

Which files a batch holds and what format each one is come from detection; how a format's records are counted
is the format module's own declaration, its `RECORDS` rule (one of the rules below). The counting itself shares
no code with ingest's readers (the standard library only), so a reader that loses records cannot hide it here:
- `LINES`: each line with a non-blank byte, counted on the decompressed bytes; a gzip stream that is corrupt or
  ends early ends in one more record (the unfinished line and the damage), and so does a read error;
- `ONE`: the file is one record (a session transcript, a run's document);
- `items(key)`: a JSON document: a list holds one record per element, an object one per element of its list
  under `key`; a zip archive (Inspect's `.eval`) one per `<key>/*.json` member;
- `rows(table)`: a SQLite database (a tool's session store): one record per row of `table`;
- `NONE`: no records (auxiliary files: tool definitions, reports, results).
A document that does not parse as JSON (or a zip or database that does not open) is one record, quarantined as
such; so is one over the size bound, never read. A format may give a rule for each kind of file it reads, as
`{"lines": ..., "document": ..., "database": ...}`.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import closing
from pathlib import Path

BLOCK = 1 << 20
LINES, ONE, NONE = "lines", "one", "none"
ITEMS = "items:"
ROWS = "rows:"
ELEMENTS = ITEMS  # a JSON list: one record per element


def items(key: str) -> str:
    return ITEMS + key


def rows(table: str) -> str:
    return ROWS + table


def _decompressed(path: Path) -> Iterator[bytes | None]:
    """The file's bytes, gunzipped (all members) when its name ends in .gz; None last if the stream is damaged."""
    with open(path, "rb") as fh:
        if not path.name.endswith(".gz"):
            while block := fh.read(BLOCK):
                yield block
            return
        stream, started = zlib.decompressobj(wbits=31), False
        while block := fh.read(BLOCK):
            while True:
                try:  # at most BLOCK bytes out at a time: a small bomb inflates a thousandfold
                    out = stream.decompress(block, BLOCK)
                except zlib.error:
                    yield None
                    return
                yield out
                started = True
                if stream.eof:  # the next member starts in what is left
                    block, stream, started = stream.unused_data, zlib.decompressobj(wbits=31), False
                    if not block:
                        break
                elif stream.unconsumed_tail or len(out) == BLOCK:
                    block = stream.unconsumed_tail
                else:
                    break
        if started and not stream.eof:
            yield None


def count_lines(path: Path) -> int:
    """Lines holding a non-blank byte; a damaged gzip stream's tail (with its unfinished line) is one record, and so
    is what a read error leaves unread. Only whether the unfinished line holds a non-blank byte is kept, never the
    line itself."""
    count, pending = 0, False  # pending: the unfinished line has a non-blank byte
    try:
        for block in _decompressed(path):
            if block is None:
                return count + 1
            first, *lines = block.split(b"\n")
            if not lines:
                pending = pending or bool(first.strip())
                continue
            rest = lines.pop()
            count += (pending or bool(first.strip())) + sum(1 for line in lines if line.strip())
            pending = bool(rest.strip())
    except OSError:
        return count + 1
    return count + pending


def count_items(path: Path, key: str, max_bytes: int | None = None) -> int:
    """Records of a JSON document (or zip archive) under the `items(key)` rule."""
    if max_bytes is not None and path.stat().st_size > max_bytes:
        return 1
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
        except (zipfile.BadZipFile, OSError):
            return 1
        return sum(1 for n in names if n.startswith(f"{key}/") and n.endswith(".json"))
    try:
        document = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError, RecursionError, OSError):
        return 1
    if isinstance(document, dict):
        document = document.get(key)
    return len(document) if isinstance(document, list) else 0


def count_rows(path: Path, table: str) -> int:
    """Rows of a table of a SQLite database, with what its write-ahead log holds (read from a copy of the two: nothing
    is written beside the file); a database that does not open, or lacks the table, is one record."""
    wal = path.with_name(path.name + "-wal")
    try:
        with tempfile.TemporaryDirectory() as folder:
            if wal.is_file() and wal.stat().st_size:
                for file in (path, wal):
                    shutil.copyfile(file, Path(folder) / file.name)
                uri = (Path(folder) / path.name).as_uri()
            else:
                uri = path.resolve().as_uri() + "?immutable=1"
            with closing(sqlite3.connect(uri, uri=True)) as db:
                return db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
    except (sqlite3.Error, OSError):
        return 1


def count(path: Path, rule: str, max_bytes: int | None = None) -> int:
    """The records of one file under a format's rule."""
    if rule == LINES:
        return count_lines(path)
    if rule == ONE:
        return 1
    if rule == NONE:
        return 0
    if rule.startswith(ITEMS):
        return count_items(path, rule.removeprefix(ITEMS), max_bytes)
    if rule.startswith(ROWS):
        return count_rows(path, rule.removeprefix(ROWS))
    raise ValueError(f"unknown record rule {rule!r}")


def rule_for(declared: str | dict[str, str], kind: str) -> str:
    """A format's rule for one of its files: `declared` itself, or its rule for the file's kind (`lines`,
    `document`, `database`)."""
    return declared if isinstance(declared, str) else declared[kind]


def recount(files: Iterable[tuple[Path, str]], max_bytes: int | None = None) -> int:
    """Raw records of (file, rule) pairs: the files a batch's formats read, each with its format's rule."""
    return sum(count(path, rule, max_bytes) for path, rule in files)
