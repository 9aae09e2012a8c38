"""No clicks past switching automation on, and never a half-built corpus.

Starts `dagster dev` (webserver + daemon) on a temporary instance whose data was
published once, switches on `new_batch_sensor` and `corpus_refresh_sensor` through the GraphQL API the
UI uses, drops two batch folders a few seconds apart, and waits until a version holding both is current
and nothing is in flight. Then: no two cross-batch runs overlapped, and every version that was published
holds exactly what a CLI run over the same batch folders publishes (each batch whole).
"""

import shutil
import subprocess
import time
from pathlib import Path

import polars as pl
import pytest

from cowork_assets.store import versions
from cowork_assets.synthetic.generate import generate
from tests.live_ui import dagster_dev, graphql

SENSORS = """{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name }
  sensors { name sensorState { status } } } } } }"""
START = """mutation($s: SensorSelector!) { startSensor(sensorSelector: $s) {
  __typename ... on Sensor { sensorState { status } } ... on PythonError { message } } }"""


def _wait(what: str, condition, timeout: float, server: subprocess.Popen, log: Path):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline or server.poll() is not None:
            pytest.fail(f"timed out waiting for {what}; dagster dev log tail:\n{log.read_text()[-3000:]}")
        time.sleep(2)
    return value


def _sample_ids_by_batch(folder: Path) -> dict[str, set[str]]:
    frame = pl.read_parquet(folder / "*.parquet")
    return {b: set(ids) for b, ids in frame.group_by("batch").agg(pl.col("sample_id")).iter_rows()}


def _cli_run(raw: Path, batches: set[str], work: Path) -> dict[str, set[str]]:
    """The SFT samples per batch of `cowork-curate run` over exactly these batch folders."""
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    for batch in batches:
        shutil.copytree(raw / batch, work / "raw" / batch)
    settings = CurateSettings(raw_root=str(work / "raw"), data_root=str(work / "curated"))
    assert materialize_all(settings, ensure_instance(work / "home"), echo=lambda _: None).failed == {}
    return _sample_ids_by_batch(Path(versions.current_path(settings.root, "sft_dataset")))


def test_batches_dropped_apart_publish_only_whole_batches_one_cross_batch_run_at_a_time(tmp_path):
    import dagster as dg

    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_assets.orchestration.run_health import WAITING
    from cowork_cli.runner import ensure_instance, materialize_all

    raw = tmp_path / "raw"
    generate(raw, trajectories=40, batches=1, seed=11)
    settings = CurateSettings(raw_root=str(raw), data_root=str(tmp_path / "curated"))
    home = tmp_path / "home"
    instance = ensure_instance(home)
    assert materialize_all(settings, instance, echo=lambda _: None).failed == {}
    first = versions.current(settings.root, "sft_dataset")

    log = tmp_path / "dagster-dev.log"
    dropped = ["2026-12-01-teacher-b", "2026-12-01-teacher-c", "2026-12-01-teacher-d"]
    with dagster_dev(str(home), str(raw), settings.root, log) as (base, server):
        repo = graphql(base, SENSORS)["repositoriesOrError"]["nodes"][0]
        sensors = {s["name"]: s["sensorState"]["status"] for s in repo["sensors"]}
        assert sensors["dead_run_sensor"] == "RUNNING"  # on by default
        for name in ("new_batch_sensor", "corpus_refresh_sensor"):  # what the toggles in Automation do
            selector = {
                "repositoryLocationName": repo["location"]["name"],
                "repositoryName": repo["name"],
                "sensorName": name,
            }
            started = graphql(base, START, {"s": selector})["startSensor"]
            assert started["__typename"] == "Sensor" and started["sensorState"]["status"] == "RUNNING", started

        for seed, names in ((12, dropped[:1]), (13, dropped[1:])):  # two drops a few seconds apart, the second of two
            drop = tmp_path / f"drop-{seed}"
            generate(drop, trajectories=30, batches=len(names), seed=seed)
            for batch, name in zip(sorted(p for p in drop.iterdir() if p.is_dir()), names):
                shutil.move(batch, raw / name)
            time.sleep(4)

        busy = dg.RunsFilter(statuses=WAITING)

        def latest(job: str) -> dg.RunRecord | None:
            return next(iter(instance.get_run_records(dg.RunsFilter(job_name=job), limit=1)), None)

        def settled():  # both batches published, the DuckDB file refreshed after it, nothing in flight
            current = versions.current(settings.root, "sft_dataset")
            corpus, warehouse = latest("refresh_corpus"), latest("refresh_warehouse")
            if current == first or instance.get_run_records(busy) or corpus is None or warehouse is None:
                return None
            if (warehouse.start_time or 0) < (corpus.end_time or float("inf")):  # queued behind it, then built
                return None
            return (
                current
                if set(_sample_ids_by_batch(Path(versions.current_path(settings.root, "sft_dataset")))) >= set(dropped)
                else None
            )

        last = _wait("a version with both new batches and nothing in flight", settled, 400, server, log)
        time.sleep(8)  # a few more sensor ticks: nothing more may be started
        assert not instance.get_run_records(busy) and versions.current(settings.root, "sft_dataset") == last

    # the two batches dropped at once were one run, each its own partition (a sensor tick that comes late on a busy
    # machine sees the first drop too: the one range then starts at it)
    ranges = {
        (r.tags.get("dagster/asset_partition_range_start"), r.tags.get("dagster/asset_partition_range_end"))
        for r in instance.get_runs(dg.RunsFilter(job_name="process_batch"))
    }
    assert {(dropped[1], dropped[2]), (dropped[0], dropped[2])} & ranges, ranges

    corpus_runs = sorted(
        (
            r
            for job in ("refresh_corpus", "refresh_warehouse")
            for r in instance.get_run_records(dg.RunsFilter(job_name=job))
        ),
        key=lambda r: r.start_time,
    )
    for earlier, later in zip(corpus_runs, corpus_runs[1:]):
        assert later.start_time >= earlier.end_time, "two cross-batch runs overlapped"
    made = sorted(
        p
        for p in (Path(settings.root) / "published" / "sft_dataset").iterdir()
        if p.is_dir() and p.name.startswith("v")
    )
    assert len(made) >= 2 and made[-1].name == last
    for i, version in enumerate(made):  # each version holds whole batches: what a CLI run over them gives
        published = _sample_ids_by_batch(version)
        assert _cli_run(raw, set(published), tmp_path / f"cli-{i}") == published, version.name
