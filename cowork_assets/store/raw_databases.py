"""SQLite database files in a batch (the session stores of Goose and OpenCode), opened read-only without writing a
byte beside them: a batch folder is input, and a `-shm` file appearing in it would be a new raw file."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MAGIC = b"SQLite format 3\x00"
# What SQLite keeps beside a database while it is open or not yet checkpointed: read with the database.
SIDECARS = ("-wal", "-shm", "-journal")


def is_database(head: bytes) -> bool:
    return head.startswith(MAGIC)


def sidecar_of(path: Path) -> Path | None:
    """The database a `-wal`, `-shm` or `-journal` file belongs to, when it is beside it."""
    for suffix in SIDECARS:
        if path.name.endswith(suffix) and (base := path.with_name(path.name.removesuffix(suffix))).is_file():
            return base
    return None


@contextmanager
def open_database(path: Path) -> Iterator[sqlite3.Connection]:
    """The database as the tool last wrote it: the file itself, opened immutable, when no write-ahead log is beside
    it; else a copy of the two in a temporary folder, where SQLite replays what the tool had not yet checkpointed
    (the tools keep their stores in WAL mode). sqlite3.DatabaseError when the file is not a database."""
    wal = path.with_name(path.name + "-wal")
    with tempfile.TemporaryDirectory(prefix="cowork-db-") as folder:
        if wal.is_file() and wal.stat().st_size:
            copy = Path(folder) / path.name
            shutil.copyfile(path, copy)
            shutil.copyfile(wal, Path(folder) / wal.name)
            connection = sqlite3.connect(copy)
        else:
            connection = sqlite3.connect(path.resolve().as_uri() + "?immutable=1", uri=True)
        try:
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()  # not a database: raises here
            yield connection
        finally:
            connection.close()


def tables(connection: sqlite3.Connection) -> dict[str, set[str]]:
    """Each table of the database with its columns."""
    names = [r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {n: {r[0] for r in connection.execute("SELECT name FROM pragma_table_info(?)", (n,))} for n in names}
