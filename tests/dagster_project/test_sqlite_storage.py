"""The instance's SQLite storages keep their database engines (dagster_project/sqlite_storage.py): the same files as
Dagster's `storage: sqlite`, so an instance switched to them or back keeps its history, and an engine per file,
not per connection. These fail when a Dagster upgrade changes the private methods the storages override."""

import queue
import shutil
import sqlite3
import subprocess
import sys

import dagster as dg
from alembic.script import ScriptDirectory

from bench.framework_floor import DAGSTER_SQLITE
from cowork_cli.runner import INSTANCE_HEADER, ensure_instance
from dagster_project import sqlite_storage

SEEN = "import dagster as dg; print(*dg.DagsterInstance.from_config({home!r}).get_dynamic_partitions('batches'))"


@dg.asset(partitions_def=dg.StaticPartitionsDefinition(["a", "b"]))
def numbers() -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"n": 1})


def _files(home, pattern: str = "*.db") -> list[str]:
    return sorted(str(p.relative_to(home)) for p in home.rglob(pattern))


def _materialized(instance: dg.DagsterInstance, partition: str) -> str:
    result = dg.materialize([numbers], instance=instance, partition_key=partition)
    assert result.success
    return result.run_id


def _created() -> tuple[int, ...]:
    engines = (sqlite_storage.engine, sqlite_storage.timed_out, sqlite_storage.index_engine, sqlite_storage.writing)
    return tuple(e.created for e in engines)


def test_the_storages_keep_an_engine_per_file_and_the_index_open_on_dagsters_files(tmp_path):
    home = tmp_path / "home"
    start = _created()
    instance = ensure_instance(home)
    kinds = {type(s).__name__ for s in (instance.run_storage, instance.event_log_storage, instance.schedule_storage)}
    assert kinds == {f"KeptEngineSqlite{kind}Storage" for kind in ("Run", "EventLog", "Schedule")}
    instance.all_instigator_state()  # each storage has connected: runs.db, schedules.db, the index
    before = _created()
    assert [now - then for now, then in zip(before, start)] == [2, 0, 1, 0]
    first = _materialized(instance, "a")
    # the run's own file takes an engine, its events written through it; runs.db, schedules.db and the index keep
    # theirs for every connection
    assert [now - then for now, then in zip(_created(), before)] == [0, 0, 0, 1]
    second = _materialized(instance, "b")
    assert [now - then for now, then in zip(_created(), before)] == [0, 0, 0, 2]
    index = sqlite_storage.index_engine(instance.event_log_storage.conn_string_for_shard("index"))
    assert index.pool.checkedin() == 1  # its connection kept open between uses
    # each run's connection closed at its end: its file checkpointed, its write-ahead log gone
    assert _files(home, "*.db-wal") == ["history/runs/index.db-wal"]
    assert _files(home) == sorted(
        ["history/runs.db", f"history/runs/{first}.db", f"history/runs/{second}.db", "history/runs/index.db"]
        + ["schedules/schedules.db"]
    )
    instance.dispose()
    assert index.pool.checkedin() == 0


def test_an_instance_switched_between_dagsters_storages_and_these_keeps_its_history(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(DAGSTER_SQLITE.format(home=home))  # no header: a file of the user's own
    with dg.DagsterInstance.from_config(str(home)) as before:
        assert type(before.event_log_storage).__name__ == "SqliteEventLogStorage"
        first = _materialized(before, "a")
    (home / "dagster.yaml").write_text(INSTANCE_HEADER)  # this tool's, of an older release: rewritten
    after = ensure_instance(home)
    assert type(after.event_log_storage).__name__ == "KeptEngineSqliteEventLogStorage"
    second = _materialized(after, "b")
    for instance in (after, dg.DagsterInstance.from_config(str(home))):
        assert {r.dagster_run.run_id for r in instance.get_run_records()} == {first, second}
        events = instance.fetch_materializations(numbers.key, limit=10).records
        assert sorted((e.run_id, e.partition_key) for e in events) == sorted([(first, "a"), (second, "b")])
        assert any(e.dagster_event and e.dagster_event.is_step_success for e in instance.all_logs(first))


def test_an_instance_folder_deleted_and_made_again_is_read_from_its_new_files(tmp_path):
    """The index's kept connection is to a file: a folder deleted and made again in the same process (a test's, a
    bench's, a wiped instance's) must not be read or written through the old file's connection, in this process or
    as another process sees it."""
    home = tmp_path / "home"
    for batches in (["a"], ["b", "c"]):
        shutil.rmtree(home, ignore_errors=True)
        instance = ensure_instance(home)
        instance.add_dynamic_partitions("batches", batches)
        assert instance.get_dynamic_partitions("batches") == batches
        seen = subprocess.run(
            [sys.executable, "-c", SEEN.format(home=str(home))], capture_output=True, text=True, check=True
        )
        assert seen.stdout.split() == batches


def test_the_live_view_of_a_run_sees_each_event_while_the_run_holds_its_file_open(tmp_path):
    """The UI follows a run by watching its file change; the run writes through a connection it keeps open, which in
    WAL mode leaves the file itself unchanged until it closes."""
    instance = ensure_instance(tmp_path / "home")
    storage, run_id, seen = instance.event_log_storage, "live-run", queue.Queue()
    instance.report_engine_event("first", job_name="job", run_id=run_id)
    watcher = lambda event, _cursor: seen.put(event.message)  # noqa: E731
    storage.watch(run_id, None, watcher)
    try:
        instance.report_engine_event("second", job_name="job", run_id=run_id)
        assert [seen.get(timeout=10), seen.get(timeout=10)] == ["first", "second"]
        instance.report_engine_event("third", job_name="job", run_id=run_id)
        assert seen.get(timeout=10) == "third"
        assert storage.conn_string_for_shard(run_id) in sqlite_storage.writing._engines  # held open all along
    finally:
        storage.end_watch(run_id, watcher)
        instance.dispose()


def _schema(path) -> tuple[list, list]:
    with sqlite3.connect(path) as db:
        made = db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall()
        return made, db.execute("SELECT * FROM alembic_version").fetchall() + db.execute(
            "PRAGMA journal_mode"
        ).fetchall()


def test_each_file_is_made_as_dagsters_storage_makes_it(tmp_path):
    """The files a new instance and its first run make are Dagster's own, table for table and index for index,
    stamped with the same migration revision, in WAL mode."""
    made = {}
    for name, config in (("ours", None), ("dagsters", DAGSTER_SQLITE)):
        home = tmp_path / name
        home.mkdir()
        if config:
            (home / "dagster.yaml").write_text(config.format(home=home))
        instance = ensure_instance(home) if not config else dg.DagsterInstance.from_config(str(home))
        instance.event_log_storage.get_logs_for_run("a-run")  # reading a run's events makes its file
        made[name] = {
            f: _schema(home / f) for f in ("history/runs.db", "history/runs/index.db", "history/runs/a-run.db")
        } | {"schedules": _schema(home / "schedules" / "schedules.db")}
        instance.dispose()
    assert made["ours"] == made["dagsters"]
    assert made["ours"]["history/runs/a-run.db"][1] == [(sqlite_storage._migrations().get_current_head(),), ("wal",)]


def test_opening_an_instance_and_running_on_it_reads_no_migration_script(tmp_path, monkeypatch):
    """Dagster reads its 90 migration scripts to learn their head each time a storage opens and a process first opens
    a run's file (and again to stamp a new one): the head is read once per process."""
    home = tmp_path / "home"
    ensure_instance(home).dispose()  # made, as Dagster makes it
    sqlite_storage._migrations()
    read = []
    original = ScriptDirectory.from_config.__func__
    monkeypatch.setattr(
        ScriptDirectory, "from_config", classmethod(lambda cls, *a, **k: read.append(1) or original(cls, *a, **k))
    )
    instance = ensure_instance(home)
    first = _materialized(instance, "a")
    assert instance.get_run_record_by_id(first).dagster_run.is_success and read == []
    instance.dispose()
