"""Dagster's SQLite storage with its connections kept open between statements.

Dagster's SQLite run and event-log storages create an SQLAlchemy engine, open the database file and
close it again for every statement, and commit with a full sync: ~4.5 ms per event, and a batch run
stores ~110 events (0.5 s per 20,000-trajectory batch). These subclasses keep one engine per
database file (a run's event shard, the index shard, the runs database) and use the synchronous mode
SQLite recommends with its write-ahead log, which Dagster sets: a crash of the process loses nothing,
a power cut at most the last events. The same files, tables and locking; `cowork-curate` writes this
storage into the instance's `dagster.yaml` (see `runner.ensure_instance`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from sqlalchemy import Engine, create_engine, event

OPEN_RUN_SHARDS = 4  # event shards of recent runs kept open (a process writes one or two at a time)


def _engine(url: str) -> Engine:
    engine = create_engine(url, pool_size=1, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
    event.listen(engine, "connect", lambda connection, _: connection.execute("PRAGMA synchronous=NORMAL"))
    return engine


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    def __init__(self, base_dir: str, inst_data=None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._tables: set[str] = set()
        super().__init__(base_dir, inst_data)

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def _connect(self, shard: str) -> Iterator:
        with self._db_lock:  # held for the whole connection, as in the parent: one statement at a time
            engine = self._engines.pop(shard, None)
            if engine is None:
                engine = _engine(self.conn_string_for_shard(shard))
                if shard not in self._initialized_dbs:
                    self._initdb(engine)
                    self._initialized_dbs.add(shard)
            self._engines[shard] = engine  # most recently used last
            while len(self._engines) > OPEN_RUN_SHARDS + 1:  # + the index shard
                self._engines.pop(next(iter(self._engines))).dispose()
            with engine.connect() as conn, conn.begin():
                yield conn

    def has_table(self, table_name: str) -> bool:
        """Asked before storing some events (a new engine each time in the parent); a table once there stays."""
        if table_name not in self._tables:
            if not super().has_table(table_name):
                return False
            self._tables.add(table_name)
        return True

    def _close_all(self) -> None:
        with self._db_lock:
            while self._engines:
                self._engines.popitem()[1].dispose()

    def wipe(self) -> None:
        self._close_all()  # before the shard files are deleted under open connections
        super().wipe()

    def dispose(self) -> None:
        self._close_all()
        super().dispose()


class PooledSqliteRunStorage(SqliteRunStorage):
    def __init__(self, conn_string: str, inst_data=None):
        super().__init__(conn_string, inst_data)
        self._engine = _engine(conn_string)

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls.from_local(inst_data=inst_data, **config_value)

    @contextmanager
    def connect(self) -> Iterator:
        with self._engine.connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        self._engine.dispose()
        super().dispose()


class PooledSqliteStorage(DagsterSqliteStorage):
    """Dagster's default storage layout under `base_dir`, with the run and event-log storages above."""

    def __init__(self, base_dir: str, inst_data=None):
        self.base_dir = base_dir
        self._run_storage = PooledSqliteRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = PooledSqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls.from_local(inst_data=inst_data, **config_value)
