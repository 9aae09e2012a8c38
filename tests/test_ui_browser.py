"""The UI as a user sees it: `dagster dev` on a temporary instance, driven by headless Chromium.

Chromium is Debian's `chromium` package; the test installs it when missing (CI runs as root).
Screenshots are saved under test-artifacts/ui/.
"""

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts" / "ui"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
         "--window-size=1600,1000", "--virtual-time-budget=25000"]


def _chromium() -> str:
    found = shutil.which("chromium")
    if found:
        return found
    install = subprocess.run("apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium",
                             shell=True, capture_output=True, text=True, timeout=900)
    found = shutil.which("chromium")
    if not found:
        message = f"cannot install Debian's chromium: {install.stderr[-500:]}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ui(pipeline, tmp_path_factory):
    settings, instance, _ = pipeline
    chromium = _chromium()
    port = _free_port()
    env = {**os.environ, "DAGSTER_HOME": instance.root_directory, "COWORK_RAW_ROOT": settings.raw_root,
           "COWORK_DATA_ROOT": settings.data_root}
    log = open(tmp_path_factory.mktemp("ui") / "dagster-dev.log", "w")
    server = subprocess.Popen([str(ROOT / ".venv" / "bin" / "dagster"), "dev", "-w", "workspace.yaml",
                               "-h", "127.0.0.1", "-p", str(port)], cwd=ROOT, env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "dagster dev did not start"
                time.sleep(1)
        yield chromium, f"http://127.0.0.1:{port}", tmp_path_factory.mktemp("chromium")
    finally:
        os.killpg(server.pid, signal.SIGKILL)  # dagster dev ignores SIGTERM from a non-interactive shell
        log.close()


def _page(ui, path: str, name: str) -> str:
    chromium, base, profile = ui
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    args = [chromium, *FLAGS, f"--user-data-dir={profile / name}"]
    subprocess.run([*args, f"--screenshot={ARTIFACTS / f'{name}.png'}", base + path], capture_output=True, timeout=180)
    dom = subprocess.run([*args, "--dump-dom", base + path], capture_output=True, text=True, timeout=180).stdout
    (ARTIFACTS / f"{name}.html").write_text(dom)
    return dom


def test_the_asset_graph_shows_every_group(ui):
    dom = _page(ui, "/asset-groups", "asset-graph")
    for group in ("raw", "staging", "evidence", "curation", "validation", "selection", "datasets", "warehouse"):
        assert f">{group}<" in dom, group
    assert (ARTIFACTS / "asset-graph.png").stat().st_size > 10_000


def test_an_assets_checks_page_shows_its_checks_and_outcomes(ui):
    dom = _page(ui, "/assets/evidence_audit?view=checks", "evidence-audit-checks")
    assert "evidence_lost_to_truncation" in dom and "Succeeded" in dom
    gate = _page(ui, "/assets/sft_candidate?view=checks", "sft-gate")
    assert "quality_gate" in gate and "blocking" in gate
