"""Re-runs and concurrent runs lose nothing; the DuckDB file can be rebuilt under an open reader."""

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest

from cowork_assets.store.registry import TABLES
from cowork_assets.synthetic.generate import generate
from cowork_assets.warehouse.duckdb_file import build_warehouse
from tests.conftest import ROOT


def test_two_runs_on_different_batches_at_once_corrupt_nothing(tmp_path):
    raw = tmp_path / "raw"
    generate(raw, 60, 2, 5)
    batches = sorted(p.name for p in raw.iterdir() if p.is_dir())
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    runs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cowork_cli.cli",
                "run",
                "--raw-root",
                str(raw),
                "--data-root",
                str(tmp_path / "data"),
                "--batch",
                b,
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for b in batches
    ]
    outputs = [r.communicate(timeout=600)[0] for r in runs]
    assert [r.returncode for r in runs] == [0, 0], "\n\n".join(outputs)  # whole: what failed is in the summary
    for b in batches:
        for table in ("trajectories", "messages", "curated_messages", "evidence_audit"):
            pq.read_table(TABLES[table].file(tmp_path / "data", b))  # whole, readable files
    # A later run over both batches skips them (both were recorded as done) and publishes from both.
    final = subprocess.run(
        [sys.executable, "-m", "cowork_cli.cli", "run", "--raw-root", str(raw), "--data-root", str(tmp_path / "data")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert final.returncode == 0 and final.stdout.count("up to date") == 2, final.stdout
    sft = pl.read_parquet(tmp_path / "data" / "published" / "sft_dataset" / "current" / "*.parquet")
    assert set(sft["batch"]) == set(batches)


def test_a_candidate_built_before_a_batch_was_committed_is_not_published(tmp_path):
    """A batch that another process commits after the exclusions were computed: the candidate may hold its runs
    unfiltered (or lack them while the card names them). Its publication is refused until the corpus is refreshed."""
    import dagster as dg

    from cowork_assets.datasets.schemas import PUBLISHED
    from cowork_assets.orchestration.partitions import batches
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import _run_config, ensure_instance, materialize_all
    from dagster_project.definitions import defs

    raw = tmp_path / "raw"
    generate(raw, 16, 2, 11)
    first, late = sorted(p.name for p in raw.iterdir() if p.is_dir())
    settings = CurateSettings(raw_root=str(raw), data_root=str(tmp_path / "data"))
    instance = ensure_instance(tmp_path / "home")
    instance.add_dynamic_partitions(batches.name, [first, late])
    config = _run_config(settings)
    corpus, published = defs.resolve_job_def("refresh_corpus"), [dg.AssetKey(d) for d in PUBLISHED]
    after = [*published, dg.AssetKey("dataset_card")]  # what reads the publications

    def process(batch: str) -> None:
        job = defs.resolve_job_def("process_batch")
        assert job.execute_in_process(config, instance=instance, partition_key=batch).success

    process(first)
    selection = [key for key in corpus.asset_layer.executable_asset_keys if key not in after]
    assert corpus.execute_in_process(config, instance=instance, asset_selection=selection).success  # candidates
    process(late)  # committed after the exclusions and candidates were computed
    publish = corpus.execute_in_process(config, instance=instance, asset_selection=published, raise_on_error=False)
    failures = {e.step_key: str(e.event_specific_data.error) for e in publish.all_events if e.is_step_failure}
    assert sorted(failures) == ["preference_pairs", "rl_tasks", "sft_dataset"]  # rollouts read no exclusions
    assert all("the corpus changed after its candidate's exclusions were computed" in f for f in failures.values())
    assert sorted(p.name for p in (tmp_path / "data" / "published").iterdir()) == ["rl_rollouts"]
    assert materialize_all(settings, instance, echo=lambda _: None).failed == {}  # the refresh publishes both
    sft = pl.read_parquet(tmp_path / "data" / "published" / "sft_dataset" / "current" / "*.parquet")
    assert set(sft["batch"]) == {first, late}


def test_the_duckdb_file_is_rebuilt_while_a_reader_has_it_open(pipeline):
    settings, _, _ = pipeline
    reader = duckdb.connect(str(settings.warehouse_path), read_only=True)
    try:
        before = reader.execute("SELECT count(*) FROM trajectories").fetchone()[0]
        rows, skipped = build_warehouse(settings.root, settings.warehouse_path)  # no lock error
        assert rows["trajectories"] == before and not skipped
        assert reader.execute("SELECT count(*) FROM trajectories").fetchone()[0] == before  # old file still readable
        fresh = duckdb.connect(str(settings.warehouse_path), read_only=True)
        assert fresh.execute("SELECT count(*) FROM trajectories").fetchone()[0] == before
        fresh.close()
    finally:
        reader.close()


def test_batch_workers_share_the_cores_and_keep_a_setting_the_user_made(monkeypatch):
    from cowork_cli import workers

    monkeypatch.delenv("POLARS_MAX_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert workers.worker_environment(2) == {"POLARS_MAX_THREADS": "4"}
    assert workers.worker_environment(16)["POLARS_MAX_THREADS"] == "1"
    monkeypatch.setenv("POLARS_MAX_THREADS", "3")
    assert workers.worker_environment(2) == {"POLARS_MAX_THREADS": "3"}
    with workers.environment(POLARS_MAX_THREADS="1", COWORK_TEST_VARIABLE="x"):
        assert os.environ["POLARS_MAX_THREADS"] == "1" and os.environ["COWORK_TEST_VARIABLE"] == "x"
    assert "COWORK_TEST_VARIABLE" not in os.environ and os.environ["POLARS_MAX_THREADS"] == "3"  # restored


def _allocator_setting(env: dict[str, str]) -> str:
    """Polars' allocator setting in a fresh process that loads the pipeline (and in the workers it starts,
    which inherit its environment)."""
    code = "import dagster_project.definitions, polars, os; print(os.environ['_RJEM_MALLOC_CONF'])"
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_polars_allocator_keeps_freed_pages_unless_the_user_says_otherwise():
    """Polars writes its own default into the environment on import: the pipeline's must come first, or
    it is lost (it was, unnoticed, for a day: ~3 s of the 80,000 benchmark). jemalloc applies its
    options in order, the last one winning."""
    from cowork_assets.runtime.tuning import JEMALLOC_CONF

    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    assert _allocator_setting(env).endswith("," + JEMALLOC_CONF)
    users = _allocator_setting(env | {"_RJEM_MALLOC_CONF": "dirty_decay_ms:0"})
    assert users.endswith(",dirty_decay_ms:0") and JEMALLOC_CONF not in users


def _probe_worker() -> dict:
    """Run in a batch worker: what it inherited, and the fork server's threads."""
    server = os.getppid()
    tasks = Path(f"/proc/{server}/task")
    return {
        "server": server,
        "server_threads": [(tasks / t / "comm").read_text().strip() for t in os.listdir(tasks)],
        "pool_threads": pl.thread_pool_size(),
        "variable": os.environ.get("COWORK_TEST_VARIABLE"),
    }


def _two_pools(home: str) -> list[dict]:
    """What a worker of each of two pools, one after the other in one process, sees, and the polars threads its
    pool's environment asks for."""
    from cowork_cli import workers

    seen = []
    for value, width in (("first", 64), ("second", 1)):
        os.environ["COWORK_TEST_VARIABLE"] = value
        with workers.worker_pool(width, home) as pool:
            probe = pool.submit(_probe_worker).result(timeout=120)
        seen.append(probe | {"asked": int(workers.worker_environment(width)["POLARS_MAX_THREADS"])})
    return seen


def _log_buffered(log: str) -> None:
    import logging.handlers

    logging.getLogger("worker").addHandler(logging.handlers.MemoryHandler(100, target=logging.FileHandler(log)))
    logging.getLogger("worker").warning("batch done")


def test_batch_workers_are_forked_from_one_server_that_runs_no_thread_but_its_own(tmp_path):
    """In a fresh process (its own fork server): the workers of two pools come from one server, which runs no thread
    but its own (a fork keeps only the forking thread: an allocator's background thread or a lock another thread
    held would be lost); each worker has this process's environment as it is when its pool starts, and as many
    polars threads as its pool's environment asks for."""
    import json

    from cowork_cli import runner

    runner.ensure_instance(tmp_path / "home")
    code = f"import json; from {__name__} import _two_pools; print(json.dumps(_two_pools({str(tmp_path / 'home')!r})))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    first, second = json.loads(done.stdout.splitlines()[-1])
    assert (first["variable"], second["variable"]) == ("first", "second") and first["server"] == second["server"]
    assert (first["pool_threads"], second["pool_threads"]) == (first["asked"], second["asked"])
    assert first["server_threads"] == ["python"]


def test_a_batch_worker_ends_at_once_without_losing_what_it_logged(tmp_path):
    """A worker ends without the interpreter's teardown (the fork server's children exit at once), but what its
    log handlers hold is written after each batch run."""
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli import runner, workers

    generate(tmp_path / "raw", 2, 1, 3)
    (batch,) = [p.name for p in (tmp_path / "raw").iterdir() if p.is_dir()]
    settings = CurateSettings(raw_root=str(tmp_path / "raw"), data_root=str(tmp_path / "data"))
    runner.ensure_instance(tmp_path / "home").add_dynamic_partitions("batches", [batch])
    with workers.worker_pool(1, str(tmp_path / "home")) as pool:
        pool.submit(_log_buffered, str(tmp_path / "worker.log")).result(timeout=120)
        (result,) = pool.submit(runner._process_batches, runner._run_config(settings), [batch]).result(timeout=300)
    assert result.ok and (tmp_path / "worker.log").read_text() == "batch done\n"


def test_batches_too_small_to_pay_for_workers_run_in_the_runs_own_process(tmp_path, monkeypatch):
    """Two batches of a few hundred KB run one after another in this process (no worker is started, and the
    tokenizer is not loaded beside them); with parallel_from_mb=0 the same run starts its workers, and loads the
    tokenizer while it waits on them."""
    import threading

    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli import runner, workers

    warmed = threading.Event()
    monkeypatch.setattr(runner, "_warm_up", lambda encoding: warmed.set())

    raw = tmp_path / "raw"
    generate(raw, 16, 2, 11)
    batches = sorted(p.name for p in raw.iterdir() if p.is_dir())
    assert 0.05 < workers.raw_megabytes(raw, batches) < 1
    pools = []
    monkeypatch.setattr(workers, "ProcessPoolExecutor", lambda **options: pools.append(options) or 1 / 0)
    settings = CurateSettings(raw_root=str(raw), data_root=str(tmp_path / "data"))
    instance = runner.ensure_instance(tmp_path / "home")
    outcome = runner.materialize_all(settings, instance, echo=lambda _: None)
    assert pools == [] and outcome.failed == {} and sorted(outcome.batches) == batches
    assert not warmed.is_set()
    with pytest.raises(ZeroDivisionError):  # the pool this test stands in for
        runner.materialize_all(settings.model_copy(update={"parallel_from_mb": 0}), instance, force=True)
    assert [p["max_workers"] for p in pools] == [2] and warmed.wait(timeout=10)


def test_many_small_batches_run_in_workers(tmp_path, monkeypatch):
    """PARALLEL_FROM_BATCHES batches of a few KB start the workers, one fewer does not: from there, a batch run's
    seconds of Dagster work done two at a time outweigh the workers' start-up."""
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_assets.settings import PARALLEL_FROM_BATCHES
    from cowork_cli import runner, workers

    raw = tmp_path / "raw"
    generate(raw, 2 * PARALLEL_FROM_BATCHES, PARALLEL_FROM_BATCHES, 11)
    batches = sorted(p.name for p in raw.iterdir() if p.is_dir())
    settings = CurateSettings(raw_root=str(raw), data_root=str(tmp_path / "data"))
    assert len(batches) == PARALLEL_FROM_BATCHES and workers.raw_megabytes(raw, batches) < 1
    assert workers.in_workers(settings, batches) and not workers.in_workers(settings, batches[1:])
    pools = []
    monkeypatch.setattr(workers, "ProcessPoolExecutor", lambda **options: pools.append(options) or 1 / 0)
    with pytest.raises(ZeroDivisionError):  # the pool this test stands in for
        runner.materialize_all(settings, runner.ensure_instance(tmp_path / "home"), echo=lambda _: None)
    assert [p["max_workers"] for p in pools] == [2]


def test_a_refresh_that_failed_while_a_batch_finished_elsewhere_runs_again_and_only_then(tmp_path):
    """The corpus changing under a refresh makes its selection refuse to be read (a bucket would predate the new
    batch): the CLI runs the refresh again, once per change, and a failure on an unchanged corpus stands."""
    from types import SimpleNamespace

    from cowork_assets.store import storage
    from cowork_assets.store.batch_state import STATE
    from cowork_cli.runner import REFRESH_ATTEMPTS, _execute_on_one_corpus

    root, calls, said = str(tmp_path), [], []
    settings = SimpleNamespace(root=root)

    def finish_a_batch(name: str) -> None:  # what another process's batch run leaves: its manifest
        storage.write_text_atomic(f"{root}/{STATE}/manifests/{name}.json", '{"raw": "r", "settings": "s"}')

    def execute(job, instance, config, tags):
        calls.append(job)
        if len(calls) == 1:
            finish_a_batch("b2")  # finished while the first attempt ran: it fails
        return SimpleNamespace(success=len(calls) > 1)

    finish_a_batch("b1")
    assert _execute_on_one_corpus(execute, "refresh_corpus", None, {}, settings, said.append).success
    assert calls == ["refresh_corpus"] * 2
    assert said == ["refresh_corpus: the corpus changed while it ran (a batch finished elsewhere); running it again"]
    calls.clear()
    failing = lambda *args: calls.append(1) or SimpleNamespace(success=False)  # noqa: E731
    assert not _execute_on_one_corpus(failing, "refresh_corpus", None, {}, settings, said.append).success
    assert calls == [1]  # nothing changed: not run again

    def always_changing(*args):
        calls.append(1)
        finish_a_batch(f"late-{len(calls)}")
        return SimpleNamespace(success=False)

    calls.clear()
    assert not _execute_on_one_corpus(always_changing, "refresh_corpus", None, {}, settings, said.append).success
    assert len(calls) == REFRESH_ATTEMPTS == 3
