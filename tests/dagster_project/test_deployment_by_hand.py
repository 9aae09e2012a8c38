"""docs/deployment.md's by-hand block, run as written: as root on Debian, from the repository, with its fixed ports
and /tmp folders. PostgreSQL, Redis and moto's S3 server come up, the CLI runs on the documented instance with the
Celery run launcher and the bucket as data root, `trace` reads the bucket, and `dagster dev` serves the runs the CLI
recorded in PostgreSQL while two Celery workers wait for work."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error

import pytest

from tests.conftest import ROOT
from tests.live_ui import graphql
from tests.servers import _postgres_bin

PORTS = (5433, 6380, 5000, 3000)  # PostgreSQL, Redis, S3, the webserver: as the block writes them
FOLDERS = ("/tmp/pg", "/tmp/home", "/tmp/raw")
RUNS = "{ runsOrError { ... on Runs { results { jobName status } } } }"


def _block() -> str:
    text = (ROOT / "docs" / "deployment.md").read_text()
    return text.split("runs this block as written):\n\n```bash\n", 1)[1].split("```", 1)[0]


def _in_use(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _stop(process: subprocess.Popen) -> None:
    """The block's processes, all in its session, and the PostgreSQL server pg_ctl started."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # `dagster dev` started from a script ignores SIGTERM
    process.wait()
    pg_ctl = _postgres_bin() / "pg_ctl"
    subprocess.run(["runuser", "-u", "postgres", "--", pg_ctl, "-D", "/tmp/pg", "-m", "immediate", "stop"], check=False)
    for folder in FOLDERS:
        shutil.rmtree(folder, ignore_errors=True)


def _served(log) -> list[dict]:
    """The runs the webserver lists, once it answers and every run there has finished."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            runs = graphql("http://127.0.0.1:3000", RUNS)["runsOrError"]["results"]
            if runs and all(r["status"] in ("SUCCESS", "FAILURE", "CANCELED") for r in runs):
                return runs
        except (urllib.error.URLError, ConnectionError, TimeoutError, KeyError, TypeError):
            pass
        time.sleep(3)
    pytest.fail(f"the webserver never listed the runs; the block's output ends:\n{log.read_text()[-4000:]}")


@pytest.mark.skipif(os.geteuid() != 0, reason="the block is written for root (it starts PostgreSQL as postgres)")
def test_the_by_hand_block_runs_as_written(tmp_path):
    if _postgres_bin() is None or shutil.which("redis-server") is None:
        pytest.skip("PostgreSQL or Redis is not installed (Debian: apt-get install postgresql redis-server)")
    if busy := [p for p in PORTS if _in_use(p)]:
        pytest.skip(f"port(s) {busy} the block uses are taken")
    for folder in FOLDERS:
        shutil.rmtree(folder, ignore_errors=True)
    log = tmp_path / "block.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DAGSTER_", "COWORK_"))}
    with open(log, "w") as out:
        block = subprocess.Popen(
            ["bash", "-e", "-c", _block()],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        runs = _served(log)
        output = log.read_text()
        assert block.poll() is None, output[-4000:]  # still serving: every command before `dagster dev` passed
        jobs = sorted({(r["jobName"], r["status"]) for r in runs})
        assert jobs == [
            ("process_batch", "SUCCESS"),
            ("refresh_corpus", "SUCCESS"),
            ("refresh_warehouse", "SUCCESS"),
        ], jobs
        assert len([r for r in runs if r["jobName"] == "process_batch"]) == 1  # the CLI's run over both batches
        # `trace` printed the run's chain from the bucket, and its raw line read from the raw root
        assert '  line       {"schema":"cowork.trajectory/v1","trajectory_id":"ops-00000-run-1-e3d68b"' in output
        # both Celery workers came up (`-n worker-1` names the worker `worker-1@<host>`)
        ready = [re.compile(rf"\] worker-{n}@\S+ ready\.") for n in (1, 2)]
        deadline = time.monotonic() + 120
        while not all(r.search(log.read_text()) for r in ready) and time.monotonic() < deadline:
            time.sleep(2)
        assert all(r.search(log.read_text()) for r in ready), log.read_text()[-4000:]
    finally:
        _stop(block)
