"""The UI as a user sees it: `dagster dev` on the instance of a `make run`, driven by headless Chromium over its
DevTools protocol (tests/browser.py), which keeps a page open and reads it as it updates.

Chromium is Debian's `chromium` package; the test installs it when missing (CI runs as root).
Screenshots are saved under test-artifacts/ui/.
"""

import json
import re
import subprocess
import tempfile
import time
from pathlib import Path

import dagster as dg
import pytest

from tests.conftest import materialized
from tests.live_ui import ROOT, Browser, dagster_dev, graphql, launch

ARTIFACTS = ROOT / "test-artifacts" / "ui"


@pytest.fixture(scope="module")
def pipeline(default_raw, tmp_path_factory):
    """A materialization of the default data for this module alone: its tests launch runs on the instance, which
    the session's shared `pipeline` must not see."""
    return materialized(default_raw, tmp_path_factory.mktemp("ui-pipeline"))


@pytest.fixture(scope="module")
def ui(pipeline, tmp_path_factory):
    """(base URL, browser) of `dagster dev` on the pipeline's instance; its sensors stay off."""
    settings, instance, _ = pipeline
    work = tmp_path_factory.mktemp("ui")
    with dagster_dev(instance.root_directory, settings.raw_root, settings.data_root, work / "dagster-dev.log") as (
        base,
        _,
    ):
        browser = Browser(Path(tempfile.mkdtemp(dir=work)))
        try:
            yield base, browser
        finally:
            browser.close()


def _open(ui, path: str, name: str, ready) -> str:
    """Navigate to a page and wait until `ready(text)` holds; a screenshot is kept for a person to look at."""
    base, browser = ui
    browser.go(base + path)
    text = browser.wait_for(ready, timeout=90)
    browser.screenshot(ARTIFACTS / f"{name}.png")
    return text


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _after(text: str, label: str) -> str:
    """The text shown right after a label (its value in a field, its status in a list row)."""
    lines = _lines(text)
    return next(t for t in lines[lines.index(label) + 1 :] if t != label)


def _batches(settings) -> list[str]:
    return sorted(p.name for p in Path(settings.raw_root).iterdir() if p.is_dir())


def test_the_asset_groups_read_in_pipeline_order(ui):
    from dagster_project.presentation import GROUPS, ordered

    groups = [ordered(g) for g in GROUPS]  # "1_raw" ... "9_warehouse"
    text = _open(ui, "/asset-groups", "asset-graph", lambda t: groups[-1] in t)
    positions = [_lines(text).index(g) for g in groups]
    assert positions == sorted(positions)


def test_a_cli_run_is_on_the_overview_timeline_and_its_job_page(ui):
    timeline = _open(ui, "/overview/activity/timeline", "timeline", lambda t: "refresh_warehouse" in t)
    assert "No runs or scheduled ticks in this time period." not in timeline
    lines = _lines(timeline)
    assert lines[lines.index("cowork_curate") :][:1] == ["cowork_curate"]  # the code location's own row ...
    assert {"process_batch", "refresh_corpus", "refresh_warehouse"} <= set(lines)  # ... with the CLI's runs
    runs = _open(ui, "/locations/cowork_curate/jobs/process_batch/runs", "job-runs", lambda t: "Success" in t)
    assert "You have not materialized any assets with this job yet" not in runs


def test_a_cli_run_re_executes_from_the_ui(ui, pipeline):
    base, _ = ui
    _, instance, _ = pipeline
    parent = instance.get_run_records(dg.RunsFilter(job_name="refresh_warehouse"), limit=1)[0].dagster_run
    assert parent.remote_job_origin.location_name == "cowork_curate"  # launched with its job's origin
    query = """mutation($p: ReexecutionParams!) { launchPipelineReexecution(reexecutionParams: $p) {
      __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""
    found = graphql(base, query, {"p": {"parentRunId": parent.run_id, "strategy": "ALL_STEPS"}})
    assert found["launchPipelineReexecution"]["__typename"] == "LaunchRunSuccess", found
    run_id = found["launchPipelineReexecution"]["run"]["runId"]
    page = _open(ui, f"/runs/{run_id}", "re-executed-run", lambda t: "\nSuccess\n" in t or "\nFailure\n" in t)
    assert "\nSuccess\n" in page


def test_the_published_dataset_shows_its_rows_freshness_gate_charts_and_a_way_to_its_raw_lines(ui, pipeline):
    import polars as pl

    settings, _, _ = pipeline
    rows = pl.read_parquet(settings.local_root / "published" / "sft_dataset" / "current" / "*.parquet").height
    loaded = lambda t: "Passing" in t and "launchpad of the trace_sample job opens" in t.replace("`", "")  # noqa: E731
    overview = _open(ui, "/assets/sft_dataset", "sft-dataset", loaded)  # the metadata's text renders last
    assert _after(overview, "Row count") == f"{rows:,}"
    assert _after(overview, "Freshness policy") == "Passing"
    assert _after(overview, "Owners") == "cowork-curate"
    assert "the launchpad of the trace_sample job opens" in overview.replace("`", "")
    _, browser = ui
    opened = browser.evaluate(  # the card's "[Show Markdown]" opens it in a dialog
        """(() => { const row = Array.from(document.querySelectorAll('tr'))
              .find(r => r.innerText.trim().startsWith('card'));
            const links = row ? Array.from(row.querySelectorAll('*'))
              .filter(e => e.innerText && e.innerText.trim() === '[Show Markdown]') : [];
            if (!links.length) return false; links[links.length - 1].click(); return true; })()"""
    )
    assert opened
    browser.wait_for(lambda t: "Length distribution" in t)
    deadline = time.monotonic() + 30
    while True:  # the card's images, once decoded: [source, natural width]
        images = browser.evaluate("Array.from(document.images).map(i => [i.src.slice(0, 26), i.naturalWidth])")
        if images and min(w for _, w in images) > 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    browser.screenshot(ARTIFACTS / "sft-dataset-card.png")
    assert sorted(images) == [["data:image/svg+xml;base64,", 640]] * 2  # both charts drawn, inline


def test_the_candidates_gate_is_a_blocking_check_that_passed_and_so_did_the_published_version(ui):
    loaded = lambda t: "Evaluation result\nPassed" in t and "\nSucceeded\n" in t  # noqa: E731
    checks = _open(ui, "/assets/sft_candidate?view=checks", "sft-gate", loaded)
    assert _after(checks, "quality_gate") == "Succeeded"  # the check's own row in the list
    about = _lines(checks)[_lines(checks).index("About") + 1 :]
    assert about[0] == "This is a blocking asset check."  # the check's own description, not another's
    assert _after(checks, "Evaluation result") == "Passed"
    published = _open(ui, "/assets/sft_dataset?view=checks", "sft-dataset-checks", loaded)
    assert _after(published, "passed_quality_gate") == "Succeeded"
    assert _after(published, "Evaluation result") == "Passed"


def test_a_per_batch_table_shows_every_batchs_rows(ui, pipeline):
    import polars as pl

    settings, _, _ = pipeline
    total = pl.scan_parquet(settings.local_root / "tables" / "messages" / "*" / "data.parquet").select(pl.len())
    page = _open(ui, "/assets/messages", "messages", lambda t: "rows_all_batches" in t)
    lines = _lines(page)
    key = lines.index("rows_all_batches")  # a metadata row: key, when, value
    assert lines[key + 2] == str(total.collect().item()) != _after(page, "Row count")  # not the latest batch's


def test_a_launched_run_shows_its_steps_running_before_it_ends(ui, pipeline):
    """The run page streams the run's events: its step is seen executing, without a reload, before it succeeds."""
    from dagster_project.definitions import job_definition

    steps = len(job_definition("process_batch").graph.nodes)  # one: the batch's stages, each reporting its checks
    base, browser = ui
    settings, _, _ = pipeline
    batch = _batches(settings)[0]
    run_id = launch(base, "process_batch", {"dagster/partition": batch})
    browser.go(f"{base}/runs/{run_id}")
    seen = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        text = browser.text()
        executing = re.search(r"Executing \((\d+)\)", text)
        succeeded = re.search(r"Succeeded \((\d+)\)", text)
        status = next((s for s in ("Success", "Failure") if f"\n{s}\n" in text), "running")
        seen.append((status, int(executing.group(1)) if executing else 0, int(succeeded.group(1)) if succeeded else 0))
        if status != "running" and seen[-1][2] >= steps:
            break
        time.sleep(0.2)
    browser.screenshot(ARTIFACTS / "ui-launched-run.png")
    assert steps == 1 and seen[-1] == ("Success", 0, steps)  # the step of process_batch, shown as it ended
    assert any(status == "running" and executing == 1 for status, executing, _ in seen)  # the step seen running
    assert f"partition: {batch}" in _lines(browser.text())  # the run of the batch it was launched for


def test_a_run_of_a_partition_without_its_folder_fails_in_one_line(ui, pipeline):
    base, browser = ui
    _, instance, _ = pipeline
    instance.add_dynamic_partitions("batches", ["no-such-folder"])  # what "Add a partition" does
    try:
        run_id = launch(base, "process_batch", {"dagster/partition": "no-such-folder"})
        page = _open(ui, f"/runs/{run_id}", "missing-batch-folder", lambda t: "\nFailure\n" in t)
        assert "no batch folder 'no-such-folder' under" in page
        assert "Delete partitions" in page and "FileNotFoundError" not in page
    finally:
        instance.delete_dynamic_partition("batches", "no-such-folder")


def test_two_clicks_lead_from_a_published_sample_to_its_raw_line(ui, pipeline):
    """On the dataset's page, click a sample id (the launchpad opens with it filled in), click Launch Run: the run's
    log holds the raw file and line, and the line itself."""
    import polars as pl

    from tests.cowork_cli.test_pipeline import _raw_line

    settings, _, _ = pipeline
    published = pl.read_parquet(settings.local_root / "published" / "sft_dataset" / "current" / "*.parquet")
    _, browser = ui
    ready = lambda t: "the launchpad of the trace_sample job opens" in t.replace("`", "")  # noqa: E731
    _open(ui, "/assets/sft_dataset", "trace-from-dataset", ready)
    clicked, href = browser.evaluate(  # click 1: the first sample id of trace_a_sample (it may open a new tab)
        """(() => { const a = Array.from(document.querySelectorAll('a'))
              .find(a => a.href.includes('/jobs/trace_sample/playground/setup'));
            return a ? [a.innerText.trim(), a.href] : [null, null]; })()"""
    )
    assert clicked in published["sample_id"].to_list()
    browser.go(href)
    browser.wait_for(lambda t: "Launch Run" in t and clicked in t, timeout=60)
    browser.screenshot(ARTIFACTS / "trace-launchpad.png")
    click = """(() => { const b = Array.from(document.querySelectorAll('button'))
              .find(b => b.innerText.trim() === 'Launch Run');
            if (!b || b.disabled) return false; b.click(); return true; })()"""
    deadline = time.monotonic() + 60
    while not browser.evaluate(click):  # click 2, once the config is validated and the button enabled
        assert time.monotonic() < deadline, "Launch Run stayed disabled"
        time.sleep(0.25)
    page = browser.wait_for(lambda t: "\nSuccess\n" in t or "\nFailure\n" in t, timeout=120)
    sample = published.filter(pl.col("sample_id") == clicked).row(0, named=True)
    page = browser.wait_for(lambda t: f"{sample['raw_file']}:{sample['raw_record']}" in t, timeout=60)
    browser.screenshot(ARTIFACTS / "trace-run.png")
    assert "\nSuccess\n" in page
    assert _raw_line(settings.raw_path / sample["raw_file"], sample["raw_record"])[:80] in page


def _finished(instance, job: str, after: float, timeout: float = 180) -> dg.RunRecord:
    """The first run of `job` created after `after` (a time.time()), once it has finished."""
    deadline = time.monotonic() + timeout
    while True:
        records = instance.get_run_records(dg.RunsFilter(job_name=job), limit=1)
        if records and records[0].create_timestamp.timestamp() >= after and records[0].end_time:
            return records[0]
        assert time.monotonic() < deadline, f"no {job} run finished"
        time.sleep(0.1)


def test_a_ui_launch_is_as_quick_as_the_cli(ui, pipeline):
    """From the launch mutation the launchpad sends to the run's success, against the CLI's run of the same batch
    (`cowork-curate run --batch B --force`: the batch, then the corpus refresh), on this instance. It prints its
    figures and keeps them in test-artifacts/ui/launch-timing.json."""
    base, _ = ui
    settings, instance, _ = pipeline
    batch = _batches(settings)[1]
    command = ["run", "--raw-root", settings.raw_root, "--data-root", settings.data_root]
    command += ["--dagster-home", instance.root_directory, "--batch", batch, "--force"]
    started = time.monotonic()
    subprocess.run([str(ROOT / ".venv/bin/cowork-curate"), *command], check=True, capture_output=True, cwd=ROOT)
    cli = time.monotonic() - started

    started, created = time.monotonic(), time.time()
    launch(base, "process_batch", {"dagster/partition": batch})
    run = _finished(instance, "process_batch", created)
    launched = time.monotonic() - started
    figures = {
        "cli_run": round(cli, 1),  # start-up, the batch, the corpus refresh, the DuckDB file
        "ui_launch": round(launched, 1),  # the launched batch run: queued, started, done
        "ui_launch_to_run_start": round(run.start_time - run.create_timestamp.timestamp(), 1),
    }
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "launch-timing.json").write_text(json.dumps(figures))
    print(figures)
    assert run.dagster_run.status == dg.DagsterRunStatus.SUCCESS
    assert launched <= 1.2 * cli, figures
