"""Dagster's SQLite storages, keeping their database engines and the event log index's connection.

Dagster's SQLite run, event log and schedule storages create a SQLAlchemy engine each time they connect, and open
and close a connection: a run connects a few times for every event it stores, mostly to the event log's index
(which mirrors every asset event), and closing the last connection to a file in WAL mode checkpoints it. That is
most of what a small batch costs Dagster (`python -m bench.framework_floor` compares them). These subclasses are
the same storages on the same files, so an instance switched to them, or back, keeps its history:
- one engine per database file, without a pool: each connection still opened and closed as Dagster's are;
- one connection to the event log's index kept open (Dagster's storage lock lets one thread use it at a time).
  A run's own file is not held open: the UI's live view of a run watches that file change, which in WAL mode it
  does when its last connection closes.
Dagster offers no public way to choose how its SQLite storages connect: this module, and only this one, overrides
their (private) connect methods; `tests/dagster_project/test_sqlite_storage.py` fails when an upgrade changes them,
and the live-view, UI and daemon tests run on them.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

from dagster._core.storage.event_log import SqliteEventLogStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME
from dagster._core.storage.runs import SqliteRunStorage
from dagster._core.storage.schedules import SqliteScheduleStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from sqlalchemy import create_engine, event, exc
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


# A long-lived process (the UI, the daemon) reads many runs' files: the engines of the last 256 are kept.
engine = _Engines(256, poolclass=NullPool)
timed_out = _Engines(256, poolclass=NullPool, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
# The event log index of the last few instances this process opened (tests open many), a connection each.
index_engine = _Engines(
    4, pool_size=1, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False}
)
os.register_at_fork(after_in_child=lambda: [e.forget() for e in (engine, timed_out, index_engine)])


class _OneFileKeptEngine:
    """What Dagster's run and schedule storages (one file each, config `base_dir`) change to keep their engine:
    built as the subclass (Dagster's `from_config_value` builds its own class), connecting through the kept
    engine."""

    _conn_string: str

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls.from_local(inst_data=inst_data, **config_value)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with engine(self._conn_string).connect() as conn, conn.begin():
            yield conn


class KeptEngineSqliteRunStorage(_OneFileKeptEngine, SqliteRunStorage):
    """Dagster's `SqliteRunStorage`, its engine kept."""


class KeptEngineSqliteScheduleStorage(_OneFileKeptEngine, SqliteScheduleStorage):
    """Dagster's `SqliteScheduleStorage`, its engine kept."""


class KeptEngineSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's `SqliteEventLogStorage` (config `base_dir`: a database file per run and an index file), an engine
    kept for each file."""

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> KeptEngineSqliteEventLogStorage:
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            at = self.conn_string_for_shard(shard)
            kept = index_engine(at) if shard == INDEX_SHARD_NAME else timed_out(at)
            if shard not in self._initialized_dbs:
                self._initdb(kept)
                self._initialized_dbs.add(shard)
            with kept.connect() as conn, conn.begin():
                yield conn

    def dispose(self) -> None:
        super().dispose()
        index_engine.close(self.conn_string_for_shard(INDEX_SHARD_NAME))
