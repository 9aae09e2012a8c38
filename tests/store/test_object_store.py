"""An object-store data root (`s3://bucket/prefix`) against moto's S3 server on loopback.

The same pipeline, run with the same default data, must write the same tables and publish the same
datasets into the bucket as it does to a local folder; a second run in a fresh working directory
must find everything it needs in the bucket (the bucket, not a local cache, is the truth).
"""

from __future__ import annotations

import os

import polars as pl
import pytest

from cowork_assets.ingest.batch import BATCH_TABLES
from cowork_assets.store import storage, versions
from cowork_assets.store.registry import TABLES
from tests.servers import s3_server

BUCKET = "curated"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    with s3_server(BUCKET, tmp_path_factory.mktemp("work")) as client:
        yield client


@pytest.fixture(scope="module")
def remote_run(s3, default_raw, tmp_path_factory):
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    settings = CurateSettings(raw_root=str(default_raw), data_root=f"s3://{BUCKET}/team/curated/")
    instance = ensure_instance(tmp_path_factory.mktemp("s3_home"))
    return settings, instance, materialize_all(settings, instance, echo=lambda _: None)


def _keys(s3, prefix: str) -> set[str]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return {o["Key"].removeprefix(prefix) for page in pages for o in page.get("Contents", [])}


def test_the_pipeline_runs_with_an_s3_data_root(remote_run, pipeline, manifest):
    settings, _, outcome = remote_run
    _, _, local = pipeline
    assert settings.root == f"s3://{BUCKET}/team/curated"
    assert outcome.failed == {}
    assert (
        outcome.failed_checks == local.failed_checks
        and local.failed_checks[-1] == "task_findings:tasks_consistent (WARN)"
    )


def test_tables_land_in_the_bucket_identical_to_a_local_run(remote_run, pipeline, manifest, s3):
    settings, _, _ = remote_run
    local, _, _ = pipeline
    keys = _keys(s3, "team/curated/")
    for table in BATCH_TABLES:
        assert {f"tables/{table}/batch={b}/data.parquet" for b in manifest["batches"]} <= keys
        sort = {
            "quarantine": ["raw_file", "raw_record"],
            "task_packages": ["task_hash"],
            "skipped_inputs": ["raw_file"],
        }.get(table, ["trajectory_id"])
        remote = TABLES[table].scan(settings.root).collect().sort("batch", *sort, maintain_order=True)
        here = TABLES[table].scan(local.root).collect().sort("batch", *sort, maintain_order=True)
        assert remote.equals(here), table
    assert not any(k.endswith(".tmp") for k in keys)  # only whole files were ever uploaded


def test_datasets_are_published_in_the_bucket_behind_current(remote_run, pipeline, s3):

    settings, _, _ = remote_run
    local, _, _ = pipeline
    for dataset in ("sft_dataset", "rl_tasks", "rl_rollouts"):
        version = (
            s3.get_object(Bucket=BUCKET, Key=f"team/curated/published/{dataset}/CURRENT")["Body"]
            .read()
            .decode()
            .strip()
        )
        assert version == versions.current(local.root, dataset)  # same content, same digest, same version name
        files = versions.parquet_files(versions.current_path(settings.root, dataset))
        assert files and all(f.startswith(f"s3://{BUCKET}/team/curated/published/{dataset}/{version}/") for f in files)
        for f in files:
            name = f.rsplit("/", 1)[-1]
            assert pl.read_parquet(f).equals(
                pl.read_parquet(local.local_root / "published" / dataset / "current" / name)
            )
    assert "published/CARD.md" in _keys(s3, "team/curated/")
    assert not _keys(s3, "team/curated/candidates/sft_dataset/").intersection({"GATE_PASSED"})


def test_duckdb_views_and_trace_read_the_bucket(remote_run, pipeline, capsys):
    from cowork_assets.warehouse.duckdb_file import run_query
    from cowork_cli.cli import main

    settings, _, _ = remote_run
    local, _, _ = pipeline
    assert str(settings.warehouse_path).startswith(str(settings.local_root)) and settings.warehouse_path.is_file()
    for view in ("trajectories", "curated_messages", "exclusions", "sft_dataset", "publications"):
        sql = f"SELECT count(*) FROM {view}"
        assert run_query(settings.warehouse_path, sql, data_root=settings.root) == run_query(local.warehouse_path, sql)
    tid = pl.read_parquet(local.local_root / "published" / "sft_dataset" / "current" / "train.parquet")[
        "trajectory_id"
    ][0]
    assert main(["trace", tid, "--data-root", settings.root]) == 0
    assert "published" in capsys.readouterr().out


def test_any_machine_queries_and_traces_the_bucket(remote_run, pipeline, tmp_path, monkeypatch, capsys):
    """A machine that never ran the pipeline (another work folder, no DuckDB file) gets the views rebuilt from the
    bucket's current files: `sql`, `trace` and the trace_sample job answer as they do on the local run's file."""
    import dagster as dg

    from cowork_cli.cli import main
    from dagster_project.jobs import trace_sample_job

    settings, _, _ = remote_run
    local, _, _ = pipeline
    monkeypatch.setenv("COWORK_WORK_DIR", str(tmp_path / "elsewhere"))
    here = ["--data-root", local.root]
    there = ["--data-root", settings.root]
    tid = pl.read_parquet(local.local_root / "published" / "sft_dataset" / "current" / "train.parquet")["sample_id"][0]
    answers = []
    for root in (here, there):
        capsys.readouterr()
        assert main(["sql", *root, "--query", "rows_per_table"]) == 0
        assert main(["trace", tid, *root]) == 0
        answers.append(capsys.readouterr().out)
    assert answers[0] == answers[1] and "published  sft_dataset" in answers[1]
    assert (tmp_path / "elsewhere").is_dir()
    job = trace_sample_job(settings.model_copy(update={"raw_root": str(tmp_path / "no-raw")}))
    result = job.execute_in_process(run_config={"sample_id": tid}, instance=dg.DagsterInstance.ephemeral())
    assert result.success and tid in result.output_for_node("trace_sample_op")


def test_a_fresh_machine_resumes_from_the_bucket(remote_run, tmp_path, monkeypatch):
    """Done-markers live in the bucket: another working directory and instance skip every batch."""
    from cowork_cli.runner import ensure_instance, materialize_all

    settings, _, _ = remote_run
    monkeypatch.setenv("COWORK_WORK_DIR", str(tmp_path / "other-work"))
    outcome = materialize_all(settings, ensure_instance(tmp_path / "home"), echo=lambda _: None)
    assert outcome.failed == {}
    assert sorted(outcome.skipped) == sorted(outcome.batches)
    assert settings.warehouse_path.is_file() and str(tmp_path / "other-work") in str(settings.warehouse_path)


def test_a_missing_bucket_or_unreachable_store_is_a_clear_error(s3, default_raw, tmp_path, monkeypatch, capsys):
    from cowork_cli.cli import main

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert main(["run", "--raw-root", str(default_raw), "--data-root", "s3://no-such-bucket/curated"]) == 2
    assert "the bucket of the data root s3://no-such-bucket/curated does not exist" in capsys.readouterr().err
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    storage._remote_filesystem.cache_clear()
    try:
        assert main(["run", "--raw-root", str(default_raw), "--data-root", "s3://elsewhere/curated"]) == 2
        assert "cannot reach the data root s3://elsewhere/curated" in capsys.readouterr().err
    finally:
        storage._remote_filesystem.cache_clear()
    assert not (tmp_path / "home").exists()  # refused before any instance or run was created


def test_every_table_and_dataset_in_the_bucket_has_the_content_of_the_local_run(remote_run, pipeline):
    """Content digests (cowork_cli/digest.py) of every registered table and published dataset."""
    from cowork_cli.digest import content_digests

    settings, _, _ = remote_run
    local, _, _ = pipeline
    remote, here = content_digests(settings.root), content_digests(local.root)
    assert len(here) == 23 and remote == here


def test_the_publisher_lease_admits_one_holder_renews_and_is_taken_over_once_its_holder_is_gone(s3):
    import threading
    import time

    import orjson

    from cowork_assets.store.lease import Lease, held

    root, key = f"s3://{BUCKET}/lease-test", "lease-test/state/leases/publisher.lease"
    first, second, told, times = Lease(root, "publisher", ttl=0.9), Lease(root, "publisher", ttl=0.9), [], {}

    def hold_for_two_seconds() -> None:  # renewed every 0.3 s: held past its time to live
        time.sleep(2.0)
        times["released"] = time.time()
        first.release()

    first.acquire()
    holder = threading.Thread(target=hold_for_two_seconds)
    holder.start()
    second.acquire(told.append)  # another machine's
    times["acquired"] = time.time()
    second.release()
    holder.join()
    assert times["acquired"] >= times["released"] and told == [first.holder]
    assert _keys(s3, "lease-test/") == set()  # released: deleted
    # A holder killed without releasing, one whose clock ran ten years ahead, an object that is not a lease: each is
    # taken over once unchanged for a time to live by the waiter's clock (no machine's clock is compared).
    unreadable = f"an unreadable lease object s3://{BUCKET}/{key} (taken over once unchanged for 1.2s)"
    for body, holder in (
        (orjson.dumps({"holder": "gone-host:1:x", "expires": time.time() - 1}), "gone-host:1:x"),
        (orjson.dumps({"holder": "ahead-host:2:y", "expires": time.time() + 10 * 365 * 86400}), "ahead-host:2:y"),
        (b"{not json", unreadable),
    ):
        s3.put_object(Bucket=BUCKET, Key=key, Body=body)
        told.clear()
        started = time.monotonic()
        with held(root, "publisher", waiting=told.append, ttl=1.2):
            assert 1.1 < time.monotonic() - started < 6
            assert orjson.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())["holder"].count(":") == 2
            with held(root, "publisher"):  # this process holds it already: at once
                pass
            assert _keys(s3, "lease-test/") == {"state/leases/publisher.lease"}
        assert told == [holder] and _keys(s3, "lease-test/") == set()


def test_a_refresh_launched_from_another_instance_waits_for_the_publisher_lease(remote_run, tmp_path):
    """The UI's or the schedule's cross-batch runs take the publisher lease too: one launched while another
    machine holds it starts its steps only once that machine lets go."""
    import threading
    import time

    import dagster as dg

    from cowork_assets.store.lease import Lease
    from cowork_cli.runner import _run_config
    from dagster_project.definitions import defs

    settings, _, _ = remote_run
    other, times = Lease(settings.root, "publisher"), {}
    other.acquire()

    def let_go_later() -> None:
        time.sleep(3.0)
        times["released"] = time.time()
        other.release()

    threading.Thread(target=let_go_later).start()
    instance = dg.DagsterInstance.ephemeral()
    result = defs.resolve_job_def("refresh_warehouse").execute_in_process(
        run_config=_run_config(settings), instance=instance
    )
    assert result.success
    logs = instance.all_logs(result.run_id)
    started = min(e.timestamp for e in logs if e.dagster_event and e.dagster_event.event_type_value == "STEP_START")
    waited = [e.user_message for e in logs if "waiting for" in e.user_message]
    assert started >= times["released"] and waited == [f"waiting for {other.holder}'s publishing"]


def test_two_machines_publishing_to_one_bucket_at_once_take_turns(s3, tmp_path):
    """Two `cowork-curate run`s with their own instances and work folders, started at once on one data root: both
    succeed (each batch's run and the cross-batch steps hold the bucket's leases in turn; without them the second
    machine's batch runs removed the tables the first wrote aside), and the bucket ends with its card and no lease."""
    import subprocess
    import sys

    from cowork_assets.synthetic.generate import generate

    generate(tmp_path / "raw", trajectories=8, batches=2, seed=11)
    root = f"s3://{BUCKET}/two-machines"
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "cowork_cli.cli", "run", "--raw-root", str(tmp_path / "raw"), "--data-root", root],
            env={**os.environ, "DAGSTER_HOME": str(tmp_path / f"home{i}"), "COWORK_WORK_DIR": str(tmp_path / f"w{i}")},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in (1, 2)
    ]
    outputs = [run.communicate(timeout=600)[0] for run in runs]
    failed = [line for out in outputs for line in out.splitlines() if "FAILED" in line and "CHECK" not in line]
    assert [run.returncode for run in runs] == [0, 0], failed
    keys = _keys(s3, "two-machines/")
    assert {"published/CARD.md", "published/sft_dataset/CURRENT"} <= keys and not any("leases/" in k for k in keys)


def test_the_warehouse_asks_the_store_about_a_file_once_until_told_to_forget(tmp_path):
    """DuckDB asked an object store for a file's size and time each time a statement opened it: ten requests for
    a statement reading one file twice, 1,134 HEAD requests to build the views of a 3-batch data root."""
    import duckdb
    import pyarrow.fs as pafs
    from fsspec.implementations.local import LocalFileSystem

    from cowork_assets.warehouse.object_store import ObjectStore

    asked: list[str] = []

    class Counted(LocalFileSystem):  # the store: every question about a path counted
        def info(self, path, **kwargs):
            asked.append(path)
            return super().info(path, **kwargs)

    backend = pafs.PyFileSystem(pafs.FSSpecHandler(Counted(skip_instance_cache=True)))
    store = type("TestStore", (ObjectStore,), {"protocol": "teststore"})(backend, skip_instance_cache=True)
    pl.DataFrame({"n": [1, 2, 3]}).write_parquet(tmp_path / "a.parquet")
    file = f"teststore://{tmp_path}/a.parquet"
    twice = f"SELECT (SELECT sum(n) FROM read_parquet('{file}')) + (SELECT count(*) FROM read_parquet('{file}'))"
    con = duckdb.connect()
    try:
        con.register_filesystem(store)
        assert con.execute(twice).fetchone() == (9,) and asked == [str(tmp_path / "a.parquet")]
        assert con.execute(twice).fetchone() == (9,) and len(asked) == 1  # kept
        (tmp_path / "a.parquet").unlink()
        pl.DataFrame({"n": [1, 2, 3, 4]}).write_parquet(tmp_path / "a.parquet")  # replaced, as tables are
        store.forget()
        assert con.execute(twice).fetchone() == (14,) and len(asked) == 2  # asked again: the new file is read
    finally:
        con.close()


def test_the_batches_states_come_from_one_listing_of_the_bucket(remote_run, monkeypatch):
    """Publication checks every batch's tables against its manifest, several times a run: a request for each file
    of each batch (17 a batch) in a bucket, where one listing of the tables has them all."""
    from cowork_assets.orchestration.verdict import settings_fingerprint
    from cowork_assets.store import batch_state

    settings, _, _ = remote_run
    root, raw, fingerprint = settings.root, settings.raw_path, settings_fingerprint(settings)
    batches = batch_state.processed_batches(root)
    one_at_a_time = [batch_state.check(root, raw, batch, fingerprint) for batch in batches]
    asked = []
    file_info = storage.file_info
    monkeypatch.setattr(storage, "file_info", lambda location: asked.append(location) or file_info(location))
    assert batch_state.processed_states(root, raw, fingerprint) == one_at_a_time
    assert asked == [] and len(batches) == 3 and not any(state.problem for state in one_at_a_time)
    listed = storage.files_under(storage.join(root, "tables"))
    del listed[TABLES["curated_messages"].committed_file(root, batches[1])]
    damaged = batch_state.check(root, raw, batches[1], fingerprint, listed=listed)
    assert damaged.damage == "its table curated_messages is missing" and asked == []
