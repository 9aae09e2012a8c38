"""The selection a task bucket at a time: stable buckets, identical results, one bucket alone, stale buckets refused."""

import hashlib
import os
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from cowork_assets.selection.dedup import clusters
from cowork_assets.selection.exclusions import first_batch_rows
from cowork_assets.store.batch_state import corpus_version
from cowork_assets.store.buckets import BUCKETS, bucket_groups, split_by_bucket, task_buckets
from cowork_assets.store.registry import TABLES


def test_a_tasks_bucket_is_the_first_hex_digit_of_the_sha256_of_its_id():
    ids = pl.Series(["task", "task-a", "task-b", "task", None, "tau2-airline-7"])
    expected = [hashlib.sha256(t.encode()).hexdigest()[0] if t else "0" for t in ids]
    assert task_buckets(ids).to_list() == expected == ["0", "3", "b", "0", "0", expected[-1]]
    assert len(BUCKETS) == 16 and set(expected) <= set(BUCKETS)


def test_small_buckets_are_worked_together_up_to_a_number_of_runs_and_a_large_one_alone():
    runs = pl.Series(["0"] * 5 + ["1"] * 2 + ["2"] * 2 + ["3"] + ["f"] * 4)
    assert bucket_groups(BUCKETS, runs, 4) == [["0"], ["1", "2"], ["3", *BUCKETS[4:-1]], ["f"]]
    assert bucket_groups(BUCKETS, runs, 14) == [list(BUCKETS)]
    assert bucket_groups(BUCKETS, runs, 13) == [list(BUCKETS[:-1]), ["f"]]
    assert bucket_groups(["2", "0", "1"], runs, 100) == [["2", "0", "1"]]  # in the order asked, only those
    assert bucket_groups(["a", "b"], runs, 1) == [["a", "b"]]  # buckets with no runs are in a group too
    rows = pl.DataFrame({"task_id": ["task", "task-a", "task-b", "task"], "n": [1, 2, 3, 4]})
    parts = dict(split_by_bucket(rows, ["0", "3", "5"]))  # task: 0, task-a: 3, task-b: b
    assert {b: f["n"].to_list() for b, f in parts.items()} == {"0": [1, 4], "3": [2], "5": []}
    assert all(f.columns == ["task_id", "n"] for f in parts.values())


def test_a_part_spill_gives_back_each_values_rows_once_and_leaves_no_file(tmp_path):
    from cowork_assets.store.storage import PartSpill

    rows = pl.DataFrame({"bucket": [str(i % 3) for i in range(30)], "n": range(30)})
    with PartSpill(str(tmp_path / "out.parquet"), rows.drop("bucket").to_arrow().schema, "bucket") as spill:
        for part in rows.iter_slices(7):
            spill.write(part)
        assert sorted(spill.written()) == ["0", "1", "2"]
        assert spill.take("1")["n"].to_list() == list(range(1, 30, 3))
        assert spill.take("1").height == 0 and spill.take("9").columns == ["n"]  # taken once; never written
    assert list(tmp_path.iterdir()) == []


def _by_bucket(table: str, root: str) -> dict[str, pl.DataFrame]:
    return {b: TABLES[table].read(root, b) for b in BUCKETS}


def test_each_bucket_holds_its_tasks_and_the_clusters_are_those_of_the_whole_corpus(pipeline):
    settings, _, _ = pipeline
    for table in ("dedup_clusters", "exclusions"):
        for bucket, rows in _by_bucket(table, settings.root).items():
            assert set(task_buckets(rows["task_id"])) <= {bucket}, (table, bucket)
    sigs = first_batch_rows(TABLES["dedup_signatures"].scan(settings.root).collect())
    whole = clusters(sigs, settings.near_dup_threshold)
    found = TABLES["dedup_clusters"].read(settings.root)
    assert whole.height == found.height > 0
    assert_frame_equal(found.sort("trajectory_id"), whole.sort("trajectory_id"))


def test_one_bucket_runs_alone_and_rewrites_only_its_own_files(pipeline_copy):
    from cowork_assets.selection.assets import dedup_clusters, exclusions

    root = pipeline_copy.root
    before = {t: _by_bucket(t, root) for t in ("dedup_clusters", "exclusions")}
    files = {(t, b): TABLES[t].committed_file(root, b) for t in before for b in BUCKETS}
    inodes = {k: os.stat(f).st_ino for k, f in files.items()}  # an atomic rewrite is a new file
    result = dg.materialize([dedup_clusters, exclusions], partition_key="3", resources={"settings": pipeline_copy})
    assert result.success
    assert {e.partition for e in result.get_asset_materialization_events()} == {"3"}
    changed = {k for k, f in files.items() if os.stat(f).st_ino != inodes[k]}
    assert changed == {("dedup_clusters", "3"), ("exclusions", "3")}
    for table, rows in before.items():
        for bucket in BUCKETS:
            assert_frame_equal(TABLES[table].read(root, bucket), rows[bucket])


def test_buckets_worked_one_at_a_time_write_what_they_write_worked_together(pipeline_copy, monkeypatch):
    """The pipeline's corpus is small: its refresh worked every bucket in one group. A bucket at a time, the same
    rows."""
    from cowork_assets.selection import assets
    from cowork_assets.selection.assets import dedup_clusters, exclusions
    from cowork_assets.store import buckets

    together = {t: _by_bucket(t, pipeline_copy.root) for t in ("dedup_clusters", "exclusions")}
    assert sum(f.height for f in together["dedup_clusters"].values()) > 0
    monkeypatch.setattr(buckets, "GROUP_RUNS", 1)
    monkeypatch.setattr(assets, "throttled", lambda log: log)  # every group's progress line, however quick
    ranges = {"dagster/asset_partition_range_start": BUCKETS[0], "dagster/asset_partition_range_end": BUCKETS[-1]}
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(
        [dedup_clusters, exclusions], tags=ranges, resources={"settings": pipeline_copy}, instance=instance
    )
    assert result.success
    logged = [e.user_message for e in instance.all_logs(result.run_id)]
    assert [m.split(" (")[0] for m in logged if "teacher runs clustered" in m] == [f"task buckets {b}" for b in BUCKETS]
    for table, rows in together.items():
        for bucket in BUCKETS:
            assert_frame_equal(TABLES[table].read(pipeline_copy.root, bucket), rows[bucket], check_row_order=False)


def test_a_bucket_computed_from_another_state_of_the_corpus_is_never_read(pipeline_copy):
    from cowork_cli.runner import _run_config, ensure_instance
    from dagster_project.definitions import defs

    root, corpus = pipeline_copy.root, corpus_version(pipeline_copy.root)
    for bucket in BUCKETS:  # as a refresh of the corpus as it is leaves them
        TABLES["exclusions"].write(TABLES["exclusions"].read(root, bucket), root, bucket, corpus)
    assert TABLES["exclusions"].read_current(root, corpus).height == TABLES["exclusions"].rows(root)
    stale = TABLES["exclusions"].read(root, "3")
    TABLES["exclusions"].write(stale, root, "3", corpus="a corpus before the latest batch")
    TABLES["exclusions"].write(TABLES["exclusions"].read(root, "5"), root, "5")  # noted by nothing
    with pytest.raises(RuntimeError, match=r"exclusions: task bucket\(s\) 3, 5 were not computed from the corpus"):
        TABLES["exclusions"].read_current(root, corpus)
    assert TABLES["exclusions"].read_current(root, corpus, ["4"]).height == TABLES["exclusions"].rows(root, "4")
    result = defs.resolve_job_def("refresh_corpus").execute_in_process(
        run_config=_run_config(pipeline_copy),
        instance=ensure_instance(Path(root).parent / "home"),
        raise_on_error=False,
        asset_selection=[dg.AssetKey("sft_candidate")],
    )
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert "task bucket(s) 3, 5 were not computed from the corpus as it is now" in str(failure.step_failure_data.error)
