"""Dead runs and processes: a run whose process is killed is marked failed and frees its place in the
queue; a killed `cowork-curate run` leaves no batch worker behind."""

import os
import signal
import subprocess
import sys
import time

import dagster as dg
import pytest

from cowork_assets.orchestration.run_health import PROCESS_TAG, in_flight, reap_dead_runs, recorded_process
from cowork_assets.runtime.procfs import stat_fields
from cowork_assets.synthetic.generate import generate
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    raw = tmp_path_factory.mktemp("health") / "raw"
    generate(raw, trajectories=3000, batches=2, seed=5)
    return raw


def _wait(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return value


def _descendants(pid: int) -> set[int]:
    """Every live process whose parent chain leads to `pid`."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := stat_fields(int(entry))):
            parents[int(entry)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    fields = stat_fields(pid)
    return bool(fields) and fields[0] != b"Z"  # a zombie has exited; only its exit status is left


def test_a_killed_runs_process_is_found_and_its_slot_freed(corpus, tmp_path):
    from dagster_project.definitions import defs

    home, data = tmp_path / "home", tmp_path / "data"
    batch = sorted(p.name for p in corpus.iterdir() if p.is_dir())[0]
    script = (
        "from cowork_cli.runner import ensure_instance, _run_config\n"
        "from cowork_assets.orchestration.resources import CurateSettings\n"
        "from dagster_project.definitions import defs\n"
        "import pathlib, sys\n"
        f"instance = ensure_instance(pathlib.Path({str(home)!r}))\n"
        f"instance.add_dynamic_partitions('batches', [{batch!r}])\n"
        f"s = CurateSettings(raw_root={str(corpus)!r}, data_root={str(data)!r})\n"
        f"defs.resolve_job_def('process_batch').execute_in_process(run_config=_run_config(s), instance=instance, "
        f"partition_key={batch!r})\n"
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    from cowork_cli.runner import ensure_instance

    instance = ensure_instance(home)
    started = dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])
    run = _wait(
        lambda: next(
            (r.dagster_run for r in instance.get_run_records(started) if PROCESS_TAG in r.dagster_run.tags), None
        ),
        120,
        "the run to start",
    )
    assert recorded_process(run).split(":")[1] == str(worker.pid)
    worker.kill()
    worker.wait()
    assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.STARTED  # nothing else notices
    assert in_flight(instance, ("process_batch",)) == 1  # it holds its place in the queue
    result = defs.get_sensor_def("dead_run_sensor")(dg.build_sensor_context(instance=instance))
    assert run.run_id in result.skip_message
    assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE
    assert in_flight(instance, ("process_batch",)) == 0


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_a_killed_cli_run_leaves_no_process_behind(corpus, tmp_path, how):
    cli = subprocess.Popen(
        [
            str(ROOT / ".venv" / "bin" / "cowork-curate"),
            "run",
            "--raw-root",
            str(corpus),
            "--data-root",
            str(tmp_path / "data"),
            "--dagster-home",
            str(tmp_path / "home"),
            "--set",
            "parallel_from_mb=0",  # its batches in workers, however small
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # the two batch workers (and whatever helpers) are up and working
    workers = _wait(lambda: found if len(found := _descendants(cli.pid)) >= 2 else None, 120, "the batch workers")
    time.sleep(1.0)
    workers = _descendants(cli.pid) | workers
    cli.send_signal(how)
    cli.wait(timeout=60)
    _wait(lambda: not any(_alive(p) for p in workers), 30, f"{sorted(workers)} to exit after {how.name}")


def test_a_re_executed_run_is_not_taken_for_its_parent_whose_process_is_gone(tmp_path):
    """A re-execution copies its parent's tags: the parent's (dead) process must not mark it failed."""
    from cowork_cli.runner import ensure_instance

    instance = ensure_instance(tmp_path / "home")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    host = __import__("socket").gethostname()
    dead = f"{host}:{gone.pid}:1"
    started = dg.DagsterRunStatus.STARTED
    instance.add_run(
        dg.DagsterRun("process_batch", run_id="parent", status=started, tags={PROCESS_TAG: f"parent@{dead}"})
    )
    instance.add_run(
        dg.DagsterRun("process_batch", run_id="child", status=started, tags={PROCESS_TAG: f"parent@{dead}"})
    )
    assert reap_dead_runs(instance) == ["parent"]
    assert instance.get_run_by_id("child").status == started


def test_the_hold_back_sees_a_materialize_of_cross_batch_assets_as_a_cross_batch_run():
    """The UI's "Materialize" runs `__ASSET_JOB`, not a named job: it is seen by the assets it selected."""
    from dagster_project.definitions import defs
    from dagster_project.jobs import BATCH_ASSETS, CORPUS_JOBS, CROSS_BATCH_ASSETS

    job = defs.resolve_implicit_global_asset_job_def()
    with dg.instance_for_test() as instance:
        assert in_flight(instance, CORPUS_JOBS, assets=CROSS_BATCH_ASSETS) == 0
        selection = frozenset({dg.AssetKey("exclusions"), dg.AssetKey("sft_dataset")})
        instance.create_run_for_job(job_def=job.get_subset(asset_selection=selection), asset_selection=selection)
        assert in_flight(instance, CORPUS_JOBS, assets=CROSS_BATCH_ASSETS) == 1
        assert in_flight(instance, CORPUS_JOBS) == 0  # by job name alone it was missed
        assert in_flight(instance, ("process_batch",), assets=BATCH_ASSETS) == 0
