"""The instance cowork-curate writes: Dagster's SQLite storage (its engines kept: dagster_project/sqlite_storage.py),
whose events a reader sees as they are written (the UI's run page watches them so), and a run queue that starts
launched runs within a second."""

import subprocess
import sys
import threading
import time

import dagster as dg

from cowork_cli.runner import INSTANCE_HEADER, ensure_instance

RUN = """
import time, dagster as dg

@dg.op
def first(context):
    time.sleep(1.5)

@dg.op
def second(context, after):
    time.sleep(1.5)

@dg.job
def two_steps():
    second(first())

two_steps.execute_in_process(instance=dg.DagsterInstance.from_config({home!r}))
"""


def test_a_reader_sees_a_runs_events_while_it_runs(tmp_path):
    instance = ensure_instance(tmp_path / "home")
    assert type(instance.event_log_storage).__name__ == "KeptEngineSqliteEventLogStorage"
    run = subprocess.Popen([sys.executable, "-c", RUN.format(home=str(tmp_path / "home"))])
    deadline = time.monotonic() + 60
    while not (records := instance.get_run_records(limit=1)):
        assert time.monotonic() < deadline and run.poll() is None, "the run never started"
        time.sleep(0.05)
    run_id = records[0].dagster_run.run_id
    seen: list[tuple[float, dg.DagsterEventType | None]] = []
    lock = threading.Lock()

    def received(event, _cursor):  # what the webserver's subscription to a run's events gets
        with lock:
            seen.append((time.time(), event.dagster_event_type))

    instance.event_log_storage.watch(run_id, None, received)
    try:
        assert run.wait(timeout=60) == 0
        deadline = time.monotonic() + 30  # the watcher polls: on a loaded machine the last events come later
        while dg.DagsterEventType.RUN_SUCCESS not in [kind for _, kind in seen] and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        instance.event_log_storage.end_watch(run_id, received)
    ended = instance.get_run_record_by_id(run_id).end_time
    types = [kind for _, kind in seen]
    assert types.count(dg.DagsterEventType.STEP_SUCCESS) == 2 and dg.DagsterEventType.RUN_SUCCESS in types
    first_step_done = next(t for t, kind in seen if kind == dg.DagsterEventType.STEP_SUCCESS)
    assert first_step_done < ended - 1.0  # the first step's end was seen while the second still ran


def test_the_instance_yaml_is_dagsters_storage_and_a_quick_queue(tmp_path):
    instance = ensure_instance(tmp_path / "home")
    text = (tmp_path / "home" / "dagster.yaml").read_text()
    assert text.startswith(INSTANCE_HEADER) and "dagster_project.sqlite_storage" in text
    assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
    assert instance.run_coordinator.dequeue_interval_seconds == 1
    assert isinstance(instance, dg.DagsterInstance)
