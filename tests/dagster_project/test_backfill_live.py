"""The UI's "Materialize all" on refresh_corpus asks for its task-bucket partitions and launches a backfill: with the
per-bucket assets' single-run backfill policy, the backfill of all 16 buckets is one run over the bucket range, as the
CLI's and the sensor's are, not one run per bucket each redoing every cross-batch step and republishing."""

import time

import dagster as dg

from cowork_assets.selection.buckets import BUCKETS
from cowork_assets.store import versions
from cowork_assets.synthetic.generate import generate
from tests.live_ui import REPOSITORY, dagster_dev, graphql

BACKFILL = """mutation($p: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $p) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""


def test_a_backfill_of_every_task_bucket_is_one_run(tmp_path):
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    raw = tmp_path / "raw"
    generate(raw, trajectories=20, batches=1, seed=5)
    settings = CurateSettings(raw_root=str(raw), data_root=str(tmp_path / "curated"))
    instance = ensure_instance(tmp_path / "home")
    assert materialize_all(settings, instance, echo=lambda _: None).failed == {}
    before = versions.current(settings.root, "sft_dataset")
    with dagster_dev(str(tmp_path / "home"), str(raw), settings.root, tmp_path / "dev.log") as (base, server):
        repo = graphql(base, REPOSITORY)["repositoriesOrError"]["nodes"][0]
        selector = {"repositoryLocationName": repo["location"]["name"], "repositoryName": repo["name"]}
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
            if (
                runs
                and all(r.dagster_run.is_finished for r in runs)
                and instance.get_backfill(backfill).status.value
                in (
                    "COMPLETED",
                    "COMPLETED_SUCCESS",
                    "COMPLETED_FAILED",
                    "FAILED",
                )
            ):
                break
            time.sleep(2)
    assert len(runs) == 1, [r.dagster_run.tags for r in runs]
    run = runs[0].dagster_run
    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert (run.tags["dagster/asset_partition_range_start"], run.tags["dagster/asset_partition_range_end"]) == (
        BUCKETS[0],
        BUCKETS[-1],
    )
    assert versions.current(settings.root, "sft_dataset") == before  # the same corpus: the same version
