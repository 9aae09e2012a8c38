"""No clicks past switching automation on: a newly dropped batch becomes a new dataset version.

Starts `dagster dev` (webserver + daemon) on a temporary instance whose data was published once,
switches on `new_batch_sensor` and the automation sensor through the GraphQL API the UI uses, drops a
new batch folder, and waits for the sensor's `process_batch` run and the eager cross-batch assets to
publish the next SFT version holding the new batch's samples.
"""

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import polars as pl
import pytest

from cowork_assets.datasets import publish as pub
from cowork_assets.synthetic.generate import generate
from tests.test_ui_browser import ROOT, _free_port

SENSORS = """{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name }
  sensors { name sensorState { status } } } } } }"""
START = """mutation($s: SensorSelector!) { startSensor(sensorSelector: $s) {
  __typename ... on Sensor { sensorState { status } } ... on PythonError { message } } }"""


def _graphql(base: str, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"{base}/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["data"]


def _wait(what: str, condition, timeout: float, server: subprocess.Popen, log: Path):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline or server.poll() is not None:
            pytest.fail(f"timed out waiting for {what}; dagster dev log tail:\n{log.read_text()[-3000:]}")
        time.sleep(2)
    return value


def test_a_dropped_batch_flows_through_to_a_new_dataset_version(tmp_path):
    from cowork_assets.runner import ensure_instance, materialize_all
    from cowork_assets.settings import CurateSettings

    raw = tmp_path / "raw"
    generate(raw, trajectories=40, batches=1, seed=11)
    settings = CurateSettings(raw_root=str(raw), data_root=str(tmp_path / "curated"))
    home = tmp_path / "home"
    assert materialize_all(settings, ensure_instance(home), echo=lambda _: None).failed == {}
    first = pub.current(settings.root, "sft_dataset")

    port, log = _free_port(), tmp_path / "dagster-dev.log"
    env = {**os.environ, "DAGSTER_HOME": str(home), "COWORK_RAW_ROOT": str(raw), "COWORK_DATA_ROOT": settings.root}
    with open(log, "w") as out:
        server = subprocess.Popen([str(ROOT / ".venv" / "bin" / "dagster"), "dev", "-w", "workspace.yaml", "-h",
                                   "127.0.0.1", "-p", str(port)], cwd=ROOT, env=env, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        def repository():
            try:
                nodes = _graphql(base, SENSORS)["repositoriesOrError"]["nodes"]
            except (OSError, KeyError, TypeError):
                return None
            return nodes[0] if nodes else None

        repo = _wait("the code location to load", repository, 120, server, log)
        sensors = {s["name"]: s["sensorState"]["status"] for s in repo["sensors"]}
        assert "new_batch_sensor" in sensors and "default_automation_condition_sensor" in sensors
        for name in ("new_batch_sensor", "default_automation_condition_sensor"):
            if sensors[name] != "RUNNING":  # what the toggle in Automation does
                selector = {"repositoryLocationName": repo["location"]["name"], "repositoryName": repo["name"],
                            "sensorName": name}
                started = _graphql(base, START, {"s": selector})["startSensor"]
                assert started["__typename"] == "Sensor", started
                assert started["sensorState"]["status"] == "RUNNING"

        drop = tmp_path / "drop"
        generate(drop, trajectories=30, batches=1, seed=12)
        (batch,) = [p for p in drop.iterdir() if p.is_dir()]
        shutil.move(batch, raw / "2026-12-01-teacher-new")

        second = _wait("a new sft_dataset version", lambda: (v := pub.current(settings.root, "sft_dataset")) != first
                       and v, 400, server, log)
    finally:
        os.killpg(server.pid, signal.SIGKILL)  # dagster dev ignores SIGTERM from a non-interactive shell
    assert second.startswith("v0002-")
    published = pl.read_parquet(Path(pub.current_path(settings.root, "sft_dataset")) / "*.parquet")
    assert set(published["batch"]) == {"2026-11-29-teacher-a", "2026-12-01-teacher-new"}
    card = json.loads((Path(pub.current_path(settings.root, "sft_dataset")) / "card.json").read_text())
    assert card["previous_version"] == first
