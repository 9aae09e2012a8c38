"""Dagster's SQLite storages, keeping their database engines and the connections the event log writes through.

Dagster's SQLite run, event log and schedule storages create a SQLAlchemy engine each time they connect, and open
and close a connection: a run connects a few times for every event it stores, mostly to the event log's index
(which mirrors every asset event), and closing the last connection to a file in WAL mode checkpoints it. That is
most of what a small batch costs Dagster (`python -m bench.framework_floor` compares them). These subclasses are
the same storages on the same files, so an instance switched to them, or back, keeps its history:
- one engine per database file, without a pool: each connection still opened and closed as Dagster's are;
- one connection to the event log's index kept open (Dagster's storage lock lets one thread use it at a time);
- one connection kept open to the file of each run this process writes events to, until it writes the run's end.
  The UI's live view of a run watches that file change, which in WAL mode it does only when its last connection
  closes: each event stored touches the file;
- the migration scripts' head revision is read once per process: Dagster reads its 90 scripts to learn it each time
  a storage opens and each time a process first opens a run's file, and again to stamp a new file (70 to 150 ms);
- the kept connections commit without waiting for the disk (`synchronous=NORMAL`: in WAL mode a crash of the
  machine, not of a process, may lose the last events stored, and never corrupts a file). A connection opened for
  one use waits for the disk when it closes anyway.
Dagster offers no public way to choose how its SQLite storages connect: this module, and only this one, overrides
their (private) connect and schema-creation methods and caches what their schema checks find.
`tests/dagster_project/test_sqlite_storage.py` fails when an upgrade changes them, and the live-view, UI and daemon
tests run on them.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import cache

import dagster as dg
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from dagster._core.storage.event_log import SqlEventLogStorageMetadata, SqliteEventLogStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME
from dagster._core.storage.runs import SqliteRunStorage
from dagster._core.storage.schedules import SqliteScheduleStorage
from dagster._core.storage.sql import get_alembic_config
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS, create_db_conn_string
from sqlalchemy import create_engine, event, exc, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool


class _Engines:
    """The engines of the last `size` database files used, created with `options`; one pushed out is disposed (a
    connection its pool kept closed). Thread-safe: the UI's threads share them."""

    def __init__(self, size: int, **options):
        self._size, self._options = size, options
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._lock = threading.Lock()
        self.created = 0

    def __call__(self, conn_string: str) -> Engine:
        with self._lock:
            if (kept := self._engines.pop(conn_string, None)) is None:
                kept = create_engine(conn_string, **self._options)
                if not isinstance(kept.pool, NullPool):
                    _reopened_when_replaced(kept)
                    _committed_without_waiting_for_the_disk(kept)
                self.created += 1
            self._engines[conn_string] = kept
            while len(self._engines) > self._size:
                self._engines.popitem(last=False)[1].dispose()
            return kept

    def close(self, conn_string: str) -> None:
        """Dispose of the engine of that file, if kept (its pooled connection closed)."""
        with self._lock:
            if (kept := self._engines.pop(conn_string, None)) is not None:
                kept.dispose()

    def forget(self) -> None:
        """Drop every engine without closing its connections: in a forked child they are the parent's."""
        for kept in self._engines.values():
            kept.dispose(close=False)
        self._engines.clear()


def _reopened_when_replaced(kept: Engine) -> None:
    """A kept connection is given out only while the file it opened is still the one at its path: a folder deleted
    and made again (a test's, a wiped instance's) would otherwise have its new index read and written through the
    old file's connection."""
    path = kept.url.database

    def inode() -> int | None:
        try:
            return os.stat(path).st_ino
        except FileNotFoundError:
            return None

    @event.listens_for(kept, "connect")
    def opened(_dbapi, record) -> None:
        record.info["inode"] = inode()

    @event.listens_for(kept, "checkout")
    def given_out(_dbapi, record, _proxy) -> None:
        if record.info.get("inode") != inode():
            raise exc.DisconnectionError(f"{path} was replaced: reopening it")  # the pool opens a new connection


def _committed_without_waiting_for_the_disk(kept: Engine) -> None:
    @event.listens_for(kept, "connect")
    def opened(dbapi, _record) -> None:
        dbapi.execute("PRAGMA synchronous=NORMAL")


# A long-lived process (the UI, the daemon) reads many runs' files: the engines of the last 256 are kept.
engine = _Engines(256, poolclass=NullPool)
timed_out = _Engines(256, poolclass=NullPool, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
# The event log index of the last few instances this process opened (tests open many), a connection each.
_ONE_KEPT = {"pool_size": 1, "connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False}}
index_engine = _Engines(4, **_ONE_KEPT)
# The files of the last few runs this process stores events of, a connection each until the run's end.
writing = _Engines(4, **_ONE_KEPT)
os.register_at_fork(after_in_child=lambda: [e.forget() for e in (engine, timed_out, index_engine, writing)])
RUN_ENDS = {dg.DagsterEventType.RUN_SUCCESS, dg.DagsterEventType.RUN_FAILURE, dg.DagsterEventType.RUN_CANCELED}


@cache
def _migrations() -> ScriptDirectory:
    """Dagster's migration scripts (the run, event log and schedule storages share them), read once."""
    return ScriptDirectory.from_config(get_alembic_config(sys.modules[SqliteRunStorage.__module__].__file__))


def _revision(conn: Connection) -> str | None:
    """The migration revision a database file is stamped with (None: none)."""
    return MigrationContext.configure(conn).get_current_revision()


def at_head(conn_string: str, *tables: str) -> bool:
    """Whether the file is stamped with the migrations' head revision and holds `tables`: nothing for Dagster to
    create or migrate."""
    with suppress(exc.DBAPIError, sqlite3.Error), engine(conn_string).connect() as conn:
        return _revision(conn) == _migrations().get_current_head() and all(inspect(conn).has_table(t) for t in tables)
    return False


class _OneFileKeptEngine:
    """What Dagster's run and schedule storages (one file each, config `base_dir`) change to keep their engine:
    built as the subclass (Dagster's `from_config_value` builds its own class), connecting through the kept
    engine, and opened without a look at the migrations when the file is at their head."""

    _conn_string: str
    _FILE: str  # the file's name in `base_dir`, without `.db`
    _TABLES: tuple[str, ...] = ()  # tables Dagster's `from_local` creates apart from the migrations

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls.from_local(inst_data=inst_data, **config_value)

    @classmethod
    def from_local(cls, base_dir: str, inst_data=None):
        conn_string = create_db_conn_string(base_dir, cls._FILE)
        if os.path.exists(os.path.join(base_dir, f"{cls._FILE}.db")) and at_head(conn_string, *cls._TABLES):
            return cls(conn_string, inst_data)
        return super().from_local(base_dir, inst_data)  # created, stamped or migrated as Dagster does

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with engine(self._conn_string).connect() as conn, conn.begin():
            yield conn


class KeptEngineSqliteRunStorage(_OneFileKeptEngine, SqliteRunStorage):
    """Dagster's `SqliteRunStorage`, its engine kept."""

    _FILE, _TABLES = "runs", ("instance_info",)


class KeptEngineSqliteScheduleStorage(_OneFileKeptEngine, SqliteScheduleStorage):
    """Dagster's `SqliteScheduleStorage`, its engine kept."""

    _FILE = "schedules"


class KeptEngineSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's `SqliteEventLogStorage` (config `base_dir`: a database file per run and an index file), an engine
    kept for each file, a connection for the index and for each run whose events this process stores."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._storing = threading.local()  # the run whose event this thread is storing
        self._known_tables: set[str] = set()  # tables and columns found; a migration only adds them
        self._known_columns: set[str] = set()

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> KeptEngineSqliteEventLogStorage:
        return cls(inst_data=inst_data, **config_value)

    def store_event(self, event: dg.EventLogEntry) -> None:
        self._storing.run = event.run_id
        try:
            super().store_event(event)
        finally:
            self._storing.run = None
        with suppress(FileNotFoundError):  # the run deleted meanwhile
            os.utime(self.path_for_shard(event.run_id))  # the UI's live view of the run reads it anew
        if event.dagster_event_type in RUN_ENDS:
            writing.close(self.conn_string_for_shard(event.run_id))

    def _initdb(self, engine: Engine, for_index_shard: bool = False) -> None:
        # Dagster's reads the migration scripts to learn their head for each file a process opens first, and again
        # to stamp a new run's file: a file at the head is left as it is, a new run's file made as Dagster makes it
        # (tables, WAL, stamp). Anything else, or two processes making one file at once, is Dagster's to handle.
        with suppress(exc.DBAPIError, sqlite3.Error), engine.connect() as conn:
            revision = _revision(conn)
            if revision == _migrations().get_current_head():
                return
            if revision is None and not for_index_shard and not inspect(conn).get_table_names():
                SqlEventLogStorageMetadata.create_all(engine)
                conn.execute(text("PRAGMA journal_mode=WAL;"))
                MigrationContext.configure(conn).stamp(_migrations(), "head")
                conn.commit()
                return
        super()._initdb(engine, for_index_shard)

    def has_table(self, table_name: str) -> bool:
        # Dagster's creates an engine for each question, asked for every check evaluation stored
        if table_name not in self._known_tables and super().has_table(table_name):
            self._known_tables.add(table_name)
        return table_name in self._known_tables

    def _has_asset_key_col_on_connection(self, conn: Connection, column_name: str) -> bool:
        # Dagster's reads the table's columns for every asset event stored
        if column_name not in self._known_columns and super()._has_asset_key_col_on_connection(conn, column_name):
            self._known_columns.add(column_name)
        return column_name in self._known_columns

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            at = self.conn_string_for_shard(shard)
            if shard == INDEX_SHARD_NAME:
                kept = index_engine(at)
            else:
                kept = writing(at) if shard == getattr(self._storing, "run", None) else timed_out(at)
            if shard not in self._initialized_dbs:
                self._initdb(kept)
                self._initialized_dbs.add(shard)
            with kept.connect() as conn, conn.begin():
                yield conn

    def dispose(self) -> None:
        super().dispose()
        index_engine.close(self.conn_string_for_shard(INDEX_SHARD_NAME))
