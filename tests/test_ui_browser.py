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
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts" / "ui"
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
    "--virtual-time-budget=25000",
]


def _chromium() -> str:
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ui(pipeline, tmp_path_factory):
    settings, instance, _ = pipeline
    chromium = _chromium()
    port = _free_port()
    env = {
        **os.environ,
        "DAGSTER_HOME": instance.root_directory,
        "COWORK_RAW_ROOT": settings.raw_root,
        "COWORK_DATA_ROOT": settings.data_root,
    }
    log = open(tmp_path_factory.mktemp("ui") / "dagster-dev.log", "w")
    server = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "dagster"), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
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


def _page(ui, path: str, name: str) -> list[str]:
    """The page's visible text nodes, in document order (the DOM Chromium renders, script and style left out);
    a screenshot and the DOM are kept under test-artifacts/ui/ for a person to look at."""
    chromium, base, profile = ui
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    args = [chromium, *FLAGS, f"--user-data-dir={profile / name}"]
    subprocess.run([*args, f"--screenshot={ARTIFACTS / f'{name}.png'}", base + path], capture_output=True, timeout=180)
    dom = subprocess.run([*args, "--dump-dom", base + path], capture_output=True, text=True, timeout=180).stdout
    (ARTIFACTS / f"{name}.html").write_text(dom)
    return _texts(dom)


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.texts, self._skip = [], 0

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("script", "style", "title")

    def handle_endtag(self, tag):
        self._skip -= tag in ("script", "style", "title") and self._skip > 0

    def handle_data(self, data):
        if not self._skip and data.strip():
            self.texts.append(data.strip())


def _texts(dom: str) -> list[str]:
    parser = _Text()
    parser.feed(dom)
    return parser.texts


def _after(texts: list[str], label: str) -> str:
    """The text shown right after a label (its value in a field, its status in a list row)."""
    i = texts.index(label)
    return next(t for t in texts[i + 1 :] if t != label)


def _until(ui, path: str, name: str, label: str, wanted: str, timeout: float = 120) -> list[str]:
    """Reload a page until the value after `label` is `wanted` (the daemon updates some of them)."""
    deadline = time.monotonic() + timeout
    while True:
        texts = _page(ui, path, name)
        if label in texts and _after(texts, label) == wanted or time.monotonic() > deadline:
            return texts
        time.sleep(3)


def test_the_asset_groups_read_in_pipeline_order(ui):
    texts = _page(ui, "/asset-groups", "asset-graph")
    groups = [
        "1_raw",
        "2_staging",
        "3_evidence",
        "4_curation",
        "5_validation",
        "6_selection",
        "7_datasets",
        "8_warehouse",
    ]
    positions = [texts.index(g) for g in groups]
    assert positions == sorted(positions)


def test_the_published_dataset_shows_its_rows_freshness_and_gate(ui, pipeline):
    import polars as pl

    settings, _, _ = pipeline
    rows = pl.read_parquet(settings.local_root / "published" / "sft_dataset" / "current" / "*.parquet").height
    overview = _until(ui, "/assets/sft_dataset", "sft-dataset", "Freshness policy", "Passing")
    assert _after(overview, "Row count") == f"{rows:,}"
    assert _after(overview, "Freshness policy") == "Passing"
    assert _after(overview, "Owners") == "cowork-curate"
    checks = _page(ui, "/assets/sft_dataset?view=checks", "sft-dataset-checks")
    assert _after(checks, "passed_quality_gate") == "Succeeded"  # the check's own row in the list
    assert _after(checks, "Evaluation result") == "Passed"


def test_the_candidates_gate_is_a_blocking_check_that_passed(ui):
    checks = _page(ui, "/assets/sft_candidate?view=checks", "sft-gate")
    assert _after(checks, "quality_gate") == "Succeeded"
    about = checks[checks.index("About") + 1 :]
    assert about[:3] == ["This is a", "blocking", "asset check."]  # the check's own description, not another's


def test_an_evidence_check_shows_its_outcome_per_batch(ui):
    checks = _page(ui, "/assets/evidence_audit?view=checks", "evidence-audit-checks")
    assert _after(checks, "evidence_lost_to_truncation") == "Succeeded"


def test_a_batch_run_launched_from_the_ui_succeeds(ui, pipeline):
    from tests.test_automation_live import _graphql

    _, base, _ = ui
    settings, _, _ = pipeline
    repo = _graphql(
        base, "{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name } } } } }"
    )["repositoriesOrError"]["nodes"][0]
    batch = sorted(p.name for p in Path(settings.raw_root).iterdir() if p.is_dir())[0]
    launched = _graphql(
        base,
        LAUNCH,
        {
            "p": {  # what the launchpad's "Launch run" sends
                "selector": {
                    "repositoryLocationName": repo["location"]["name"],
                    "repositoryName": repo["name"],
                    "jobName": "process_batch",
                },
                "executionMetadata": {"tags": [{"key": "dagster/partition", "value": batch}]},
                "runConfigData": {},
            }
        },
    )
    assert launched["launchRun"]["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["launchRun"]["run"]["runId"]
    page = _until(ui, f"/runs/{run_id}", "ui-launched-run", run_id[:8], "Success", timeout=240)
    assert _after(page, run_id[:8]) == "Success"  # the run's own status, beside its id
    assert _after(page, "partition:") == batch


LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
  ... on RunConfigValidationInvalid { errors { message } } } }"""
