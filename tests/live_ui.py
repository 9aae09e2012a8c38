"""What the live UI tests share: `dagster dev` on an instance, its GraphQL API, and a headless Chromium kept open
and driven over the DevTools protocol (one page that navigates, whose rendered text, images and screenshots are
read while it lives, so a page that updates itself can be watched)."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import websocket

from tests.conftest import ROOT

REPOSITORY = "{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name } } } } }"
LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
  ... on RunConfigValidationInvalid { errors { message } } } }"""
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--window-size=1600,1000",
    "--remote-allow-origins=*",  # Debian's chromium refuses DevTools connections that send an Origin otherwise
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(base: str, query: str, variables: dict | None = None) -> dict:
    """The answer's `data`, as the UI reads it: an error the server answers with a status of 500 (a launch the code
    location refused) still carries it."""
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"{base}/graphql", body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())["data"]
    except urllib.error.HTTPError as error:
        return json.loads(error.read())["data"]


def launch(base: str, job: str, tags: dict[str, str], config: dict | None = None) -> str:
    """Launch a job as the launchpad's "Launch run" does; the run's id."""
    repo = graphql(base, REPOSITORY)["repositoriesOrError"]["nodes"][0]
    launched = graphql(
        base,
        LAUNCH,
        {
            "p": {
                "selector": {
                    "repositoryLocationName": repo["location"]["name"],
                    "repositoryName": repo["name"],
                    "jobName": job,
                },
                "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
                "runConfigData": config or {},
            }
        },
    )
    assert launched["launchRun"]["__typename"] == "LaunchRunSuccess", launched
    return launched["launchRun"]["run"]["runId"]


@contextmanager
def dagster_dev(
    home: str, raw_root: str, data_root: str, log: Path, **env: str
) -> Iterator[tuple[str, subprocess.Popen]]:
    """`dagster dev` on an instance, as `make ui` starts it; yields (base URL, server) once the code location is
    loaded. It runs in a session of its own: started from a non-interactive shell it ignores SIGTERM."""
    port = free_port()
    variables = {**os.environ, "DAGSTER_HOME": home, "COWORK_RAW_ROOT": raw_root, "COWORK_DATA_ROOT": data_root, **env}
    with open(log, "w") as out:
        server = subprocess.Popen(
            [
                str(ROOT / ".venv" / "bin" / "dagster"),
                "dev",
                "-w",
                "workspace.yaml",
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
            ],
            cwd=ROOT,
            env=variables,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if graphql(base, REPOSITORY)["repositoriesOrError"]["nodes"]:
                    break
            except (OSError, KeyError, TypeError):
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                pytest.fail(f"dagster dev did not start; its log:\n{log.read_text()[-3000:]}")
            time.sleep(1)
        yield base, server
    finally:
        os.killpg(server.pid, signal.SIGKILL)


def chromium() -> str:
    """Debian's chromium, installed when missing (CI runs as root); the test skips (fails on CI) without it."""
    found = shutil.which("chromium")
    if found:
        return found
    install = subprocess.run(
        "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium",
        shell=True,
        capture_output=True,
        text=True,
        timeout=900,
    )
    found = shutil.which("chromium")
    if not found:
        message = f"cannot install Debian's chromium: {install.stderr[-500:]}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


class Browser:
    def __init__(self, profile: Path):
        self.process = subprocess.Popen(
            [chromium(), *FLAGS, "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        port = None
        for line in self.process.stderr:  # "DevTools listening on ws://127.0.0.1:<port>/devtools/browser/..."
            if found := re.search(r"ws://127\.0\.0\.1:(\d+)/", line):
                port = found.group(1)
                break
        assert port, "chromium did not open its DevTools port"
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = next(p for p in pages if p["type"] == "page")
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self._id = 0

    def send(self, method: str, **params) -> dict:
        self._id += 1
        self.socket.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self._id:
                assert "error" not in message, message
                return message["result"]

    def go(self, url: str) -> None:
        self.send("Page.navigate", url=url)

    def evaluate(self, expression: str):
        return self.send("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def text(self) -> str:
        return self.evaluate("document.body ? document.body.innerText : ''") or ""

    def wait_for(self, predicate, timeout: float = 60, every: float = 0.25):
        """The page's text once `predicate(text)` holds; the last text seen when `timeout` passes first."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            if predicate(text) or time.monotonic() > deadline:
                return text
            time.sleep(every)

    def screenshot(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"]))

    def close(self) -> None:
        self.socket.close()
        self.process.kill()
        self.process.wait()
