"""Launches as the UI sends them, over `dagster dev`'s GraphQL API, on one small materialized corpus:

- "Materialize all" on refresh_corpus asks for its task-bucket partitions and launches a backfill: with the per-bucket
  assets' single-run backfill policy, the backfill of all 16 buckets is one run over the bucket range, as the CLI's
  and the sensor's are, not one run per bucket each redoing every cross-batch step and republishing;
- the trace_sample launchpad refuses an empty sample id, and one that names nothing, in one sentence, before any run
  starts; a known id launches."""

import time

import dagster as dg
import polars as pl
import pytest

from cowork_assets.store import versions
from cowork_assets.store.buckets import BUCKETS
from cowork_assets.synthetic.generate import generate
from tests.live_ui import REPOSITORY, dagster_dev, graphql

BACKFILL = """mutation($p: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $p) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""
FINISHED = ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED")
LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """(base URL, server, settings, instance, repository selector) of `dagster dev` on a materialized corpus."""
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    tmp_path = tmp_path_factory.mktemp("live")
    raw = tmp_path / "raw"
    generate(raw, trajectories=20, batches=1, seed=5)
    settings = CurateSettings(raw_root=str(raw), data_root=str(tmp_path / "curated"))
    instance = ensure_instance(tmp_path / "home")
    assert materialize_all(settings, instance, echo=lambda _: None).failed == {}
    with dagster_dev(str(tmp_path / "home"), str(raw), settings.root, tmp_path / "dev.log") as (base, server):
        repo = graphql(base, REPOSITORY)["repositoriesOrError"]["nodes"][0]
        selector = {"repositoryLocationName": repo["location"]["name"], "repositoryName": repo["name"]}
        yield base, server, settings, instance, selector


def test_a_backfill_of_every_task_bucket_is_one_run(live):
    base, server, settings, instance, selector = live
    before = versions.current(settings.root, "sft_dataset")
    params = {
        "selector": {"partitionSetName": "refresh_corpus_partition_set", "repositorySelector": selector},
        "partitionNames": list(BUCKETS),
        "fromFailure": False,
    }
    launched = graphql(base, BACKFILL, {"p": params})["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    backfill = launched["backfillId"]
    deadline = time.monotonic() + 300
    runs = []
    while time.monotonic() < deadline and server.poll() is None:
        runs = instance.get_run_records(dg.RunsFilter(tags={"dagster/backfill": backfill}))
        # Done once it has submitted its last bucket (or is marked completed: the daemon does so only at its next
        # tick, 30 s on) and its runs have finished.
        state = instance.get_backfill(backfill)
        submitted = state.last_submitted_partition_name == BUCKETS[-1] or state.status.value in FINISHED
        if runs and submitted and all(r.dagster_run.is_finished for r in runs):
            break
        time.sleep(1)
    assert len(runs) == 1, [r.dagster_run.tags for r in runs]
    run = runs[0].dagster_run
    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert (run.tags["dagster/asset_partition_range_start"], run.tags["dagster/asset_partition_range_end"]) == (
        BUCKETS[0],
        BUCKETS[-1],
    )
    assert versions.current(settings.root, "sft_dataset") == before  # the same corpus: the same version


def test_the_trace_launchpad_refuses_an_empty_or_unknown_id_in_one_sentence_before_any_run(live):
    base, _, settings, instance, selector = live
    runs_before = len(instance.get_run_records())

    def launch(sample_id: str) -> dict:
        params = {"selector": {**selector, "jobName": "trace_sample"}, "runConfigData": {"sample_id": sample_id}}
        return graphql(base, LAUNCH, {"p": params})["launchRun"]

    empty, unknown = launch(""), launch("no-such-sample")
    assert [r["__typename"] for r in (empty, unknown)] == ["PythonError", "PythonError"]  # refused: no run made
    assert empty["message"].strip().endswith("sample_id is empty: give a sample id (a published dataset's sample_id)")
    assert "no trajectory or sample 'no-such-sample' (ids are case-sensitive" in unknown["message"]
    assert len(instance.get_run_records()) == runs_before
    sample = pl.read_parquet(settings.local_root / "published" / "sft_dataset" / "current" / "*.parquet")["sample_id"][
        0
    ]
    assert launch(sample)["__typename"] == "LaunchRunSuccess"
