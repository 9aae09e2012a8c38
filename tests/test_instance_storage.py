"""The instance cowork-curate writes keeps Dagster's SQLite layout, with connections kept open."""

import dagster as dg
import pytest

from cowork_cli.instance_storage import OPEN_RUN_SHARDS, PooledSqliteEventLogStorage, PooledSqliteRunStorage
from cowork_cli.runner import INSTANCE_HEADER, ensure_instance


@dg.op
def emit(context: dg.OpExecutionContext) -> int:
    context.log.info("hello")
    return 1


@dg.job
def tiny():
    emit()


def test_runs_and_events_round_trip_through_more_runs_than_open_shards(tmp_path):
    instance = ensure_instance(tmp_path / "home")
    assert isinstance(instance.event_log_storage, PooledSqliteEventLogStorage)
    assert isinstance(instance.run_storage, PooledSqliteRunStorage)
    ids = [tiny.execute_in_process(instance=instance).run_id for _ in range(OPEN_RUN_SHARDS + 2)]
    assert len(instance.event_log_storage._engines) == OPEN_RUN_SHARDS + 1  # older run shards were closed
    # Every run and every event is there, including those of runs whose shard was closed, and a fresh
    # instance on the same folder (Dagster's default SQLite layout: history/runs.db, history/runs/<id>.db) reads them.
    assert sorted((tmp_path / "home" / "history" / "runs").glob("*.db")) == sorted(
        [tmp_path / "home" / "history" / "runs" / f"{i}.db" for i in ids]
        + [tmp_path / "home" / "history" / "runs" / "index.db"]
    )
    for reader in (instance, dg.DagsterInstance.from_config(str(tmp_path / "home"))):
        assert {r.dagster_run.run_id for r in reader.get_run_records()} == set(ids)
        for run_id in ids:
            assert reader.get_run_by_id(run_id).is_success
            assert [e.user_message for e in reader.all_logs(run_id) if e.user_message == "hello"] == ["hello"]
    storage = instance.event_log_storage
    for connect in (storage.index_connection, instance.run_storage.connect):  # WAL, synced at checkpoints
        with connect() as conn:
            assert [conn.exec_driver_sql(f"PRAGMA {p}").scalar() for p in ("journal_mode", "synchronous")] == ["wal", 1]
    assert storage.has_table("asset_event_tags") and not storage.has_table("no_such_table")
    assert "asset_event_tags" in storage._tables and "no_such_table" not in storage._tables  # only found ones kept
    instance.event_log_storage.wipe()  # closes its connections before deleting the shard files
    assert instance.all_logs(ids[0]) == []
    instance.dispose()
    assert instance.event_log_storage._engines == {}


def test_the_instance_file_is_brought_up_to_date_unless_the_user_took_it_over(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    config = home / "dagster.yaml"
    config.write_text(INSTANCE_HEADER + "\ntelemetry:\n  enabled: false\n")  # written by an older version
    ensure_instance(home)
    assert "PooledSqliteStorage" in config.read_text() and str(home.resolve()) in config.read_text()
    own = "# mine\ntelemetry:\n  enabled: false\n"
    config.write_text(own)
    ensure_instance(home)
    assert config.read_text() == own


def test_dagsters_own_storage_is_one_switch_away(tmp_path, monkeypatch):
    monkeypatch.setenv("COWORK_INSTANCE_STORAGE", "dagster")
    instance = ensure_instance(tmp_path / "home")
    assert type(instance.event_log_storage).__name__ == "SqliteEventLogStorage"
    assert tiny.execute_in_process(instance=instance).success
    monkeypatch.setenv("COWORK_INSTANCE_STORAGE", "fast")
    with pytest.raises(ValueError, match="COWORK_INSTANCE_STORAGE='fast': expected one of pooled, dagster"):
        ensure_instance(tmp_path / "other")
