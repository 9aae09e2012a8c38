"""The `make run` path end to end: Dagster materializes everything, checks pass, DuckDB agrees."""

import json
import re

import dagster as dg
import polars as pl
import pyarrow.parquet as pq
import pytest

from cowork_assets.ingest.batch import BATCH_TABLES, root_skips_file
from cowork_assets.store.registry import TABLES
from cowork_assets.warehouse.duckdb_file import named_query, query_names, query_params, run_query
from cowork_cli.cli import main


def test_every_batch_and_the_warehouse_materialize_and_all_checks_pass(pipeline, manifest):
    settings, instance, outcome = pipeline
    assert outcome.failed == {}
    # The only failing checks are the warnings that the generator's injected task defects were found: the
    # inconsistent packages, and the recorded grades a replay of the checks disagrees with (count_mismatch and
    # duplicate_creations runs), in every batch.
    assert outcome.failed_checks == [f"regrade:grader_agreement [{b}] (WARN)" for b in sorted(manifest["batches"])] + [
        "task_findings:tasks_consistent (WARN)"
    ]
    assert sorted(outcome.batches) == sorted(manifest["batches"])
    assert set(instance.get_dynamic_partitions("batches")) == set(manifest["batches"])
    import dagster as dg

    for table in BATCH_TABLES:
        mats = instance.fetch_materializations(dg.AssetKey(table), limit=10).records
        assert sorted(m.partition_key for m in mats) == sorted(manifest["batches"])
    assert instance.get_latest_materialization_event(dg.AssetKey("warehouse")) is not None


def test_the_clis_runs_say_so_and_its_cross_batch_runs_carry_the_tag_the_queue_limits(pipeline, manifest):
    _, instance, _ = pipeline
    runs = instance.get_runs()
    first, *_, last = sorted(manifest["batches"])
    keys = ("dagster/asset_partition_range_start", "dagster/asset_partition_range_end")
    assert sorted(
        (r.job_name, tuple(map(r.tags.get, keys))) for r in runs
    ) == [  # the three batches in one run, each its own partition
        ("process_batch", (first, last)),
        ("refresh_corpus", ("0", "f")),
        ("refresh_warehouse", (None, None)),
    ]
    assert all(r.tags["cowork/launched_by"] == "cli" for r in runs)
    cross = {r.job_name for r in runs if r.tags.get("cowork/stage") == "cross-batch"}
    assert cross == {"refresh_corpus", "refresh_warehouse"}


def test_views_return_the_parquet_row_counts(pipeline):
    from cowork_assets.store.registry import REGISTRY, TABLES

    settings, _, _ = pipeline
    for table in (t.name for t in REGISTRY if t.per_batch):
        files = sorted(__import__("glob").glob(TABLES[table].glob(settings.root)))
        assert len(files) == 3
        if table == "skipped_inputs":  # plus what the raw root holds beside its batches (the generator's files)
            files.append(root_skips_file(settings.root))
        parquet_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        _, rows = run_query(settings.warehouse_path, f"SELECT count(*) FROM {table}")
        assert rows[0][0] == parquet_rows


def test_named_queries_run(pipeline, manifest):
    settings, _, _ = pipeline
    assert {
        "rows_per_table",
        "quarantine_reasons",
        "longest_observations",
        "lost_evidence",
        "strategy_cost",
        "why_excluded",
        "exclusions_by_criterion",
        "samples_per_split",
    } <= set(query_names())
    for name in query_names():
        sql = named_query(name)
        columns, rows = run_query(settings.warehouse_path, sql, query_params(sql))
        assert columns and (rows or name == "lost_evidence"), name  # the default run loses no evidence
    _, rows = run_query(settings.warehouse_path, named_query("quarantine_reasons"))
    expected = {(b, r): n for b, v in manifest["batches"].items() for r, n in v["quarantined"].items()}
    assert {(b, r): n for b, r, n, _ in rows} == expected


def test_published_datasets_are_queryable_per_split_and_category(pipeline):
    settings, _, _ = pipeline
    _, rows = run_query(settings.warehouse_path, named_query("samples_per_split"))
    sft = pl.read_parquet(settings.local_root / "published" / "sft_dataset" / "current" / "*.parquet")
    assert sum(n for d, _, _, n in rows if d == "sft_dataset") == sft.height
    assert {(d, s) for d, s, _, _ in rows} == {
        (d, s) for d in ("sft_dataset", "rl_tasks") for s in ("train", "validation")
    }


def test_rerun_is_idempotent(pipeline):
    from cowork_cli.runner import materialize_all

    settings, instance, _ = pipeline
    before = {t: TABLES[t].scan(settings.root).collect() for t in BATCH_TABLES}
    first = sorted(before["trajectories"]["batch"].unique())[0]
    skipped = materialize_all(settings, instance, only=[first], echo=lambda _: None)
    assert skipped.skipped == [first] and skipped.failed == {}  # already done: not redone
    outcome = materialize_all(settings, instance, only=[first], echo=lambda _: None, force=True)
    assert outcome.failed == {} and outcome.skipped == []
    for table, frame in before.items():
        assert TABLES[table].scan(settings.root).collect().equals(frame), table
    # the unchanged republish names the version before the current one, as the current card does
    event = instance.get_latest_materialization_event(dg.AssetKey("sft_dataset")).asset_materialization
    card = json.loads((settings.local_root / "published" / "sft_dataset" / "current" / "card.json").read_text())
    assert event.metadata["previous_version"].value == (card["previous_version"] or "none")
    assert event.metadata["version"].value == card["version"]


def test_cli_run_and_sql(default_raw, manifest, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    data = tmp_path / "curated"
    assert (
        main(["run", "--raw-root", str(default_raw), "--data-root", str(data), "--set", "read_chunk_records=50"]) == 0
    )
    out = capsys.readouterr().out
    import re

    quarantined = sum(sum(b["quarantined"].values()) for b in manifest["batches"].values())
    assert "[3/3] batch" in out and re.search(r"^trajectories +300 +3$", out, re.M)
    assert f"quarantined raw records: {quarantined}" in out
    assert "WARNING CHECK task_findings:tasks_consistent (WARN)" in out and "(ERROR)" not in out
    assert "FAILED CHECK" not in out and not re.search(r"\d+ of \d+ shown", out)  # warnings worded as such
    ui = f"UI:      make ui DAGSTER_HOME={tmp_path / 'home'} RAW_ROOT={default_raw.resolve()} DATA_ROOT={data}"
    assert ui in out  # the instance and roots this run used, not the defaults
    assert out.count("note: planted: the synthetic generator writes task packages whose checks disagree") == 3
    assert str(data / "cowork.duckdb") in out
    assert (tmp_path / "home" / "dagster.yaml").read_text().count("enabled: false") >= 2
    assert (
        main(["sql", "--data-root", str(data), "SELECT count(*) AS n FROM trajectories WHERE teacher_role = 'teacher'"])
        == 0
    )
    assert capsys.readouterr().out.splitlines()[2].strip().isdigit()
    assert main(["sql", "--data-root", str(data), "--query", "quarantine_reasons"]) == 0
    assert "truncated_gzip" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--raw-root", "/definitely/not/here"], "is not a directory"),
        (["run", "--raw-root", ".", "--set", "colour=blue"], "unknown setting 'colour'"),
        (["run", "--raw-root", ".", "--set", "raw_root=x"], "use --raw-root"),
        (["sql", "--query", "no_such_query"], "no query named 'no_such_query'"),
        (["sql"], "either a SQL statement or --query"),
        (["sql", "--db", "/nope.duckdb", "SELECT 1"], "no DuckDB file"),
        (["generate", "--out", "/tmp", "--trajectories", "5"], "not empty"),
        (["generate", "--out", "/tmp/x-cc", "--rate", "bogus=1"], "unknown rate"),
    ],
)
def test_cli_errors_are_clear_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_cli_run_on_a_root_without_batches(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    (tmp_path / "raw").mkdir()
    assert main(["run", "--raw-root", str(tmp_path / "raw"), "--data-root", str(tmp_path / "out")]) == 2
    assert "no batch folders" in capsys.readouterr().err


def test_raw_batches_are_observed_with_their_size(pipeline, manifest):
    import dagster as dg

    _, instance, _ = pipeline
    records = instance.fetch_observations(dg.AssetKey("raw_batches"), limit=10).records
    got = {r.partition_key: r.asset_observation.metadata["raw_records"].value for r in records}
    assert got == {b: v["records"] for b, v in manifest["batches"].items()}


def _raw_line(path, number: int) -> str:
    """The line as a person reads it from the file (what a truncated gzip stream holds, too)."""
    import zlib

    data = path.read_bytes()
    data = zlib.decompressobj(wbits=31).decompress(data) if path.name.endswith(".gz") else data
    return data.decode(errors="replace").splitlines()[number - 1]


def test_trace_explains_a_published_and_an_excluded_sample(pipeline, labels, capsys):
    settings, _, _ = pipeline
    db = str(settings.warehouse_path)
    sft = pl.read_parquet(settings.local_root / "published" / "sft_dataset" / "current" / "*.parquet")
    sample = sft.row(0, named=True)
    assert main(["trace", sample["sample_id"], "--db", db, "--raw-root", settings.raw_root]) == 0
    out = capsys.readouterr().out
    version = (settings.local_root / "published" / "sft_dataset" / "CURRENT").read_text().strip()
    assert f"{sample['raw_file']}:{sample['raw_record']}" in out
    raw = _raw_line(settings.raw_path / sample["raw_file"], sample["raw_record"])
    assert f"  line       {raw[:300]}" + (" ..." if len(raw) > 300 else "") in out.splitlines()
    assert f"published  sft_dataset {version} ({sample['split']} split)" in out
    copy = next(l for l in labels if l["kind"] == "near_duplicate")
    assert main(["trace", copy["trajectory_id"], "--db", db]) == 0
    out = capsys.readouterr().out
    assert f"excluded   dedup: near duplicate - of {copy['duplicate_of']}" in out and "published" not in out
    assert main(["trace", "no-such-id", "--db", db]) == 2
    assert main(["trace", " ", "--db", db]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "cowork-curate trace: error: no sample id given: name a sample or trajectory id (a published dataset's "
        "sample_id)"
    )


def test_the_trace_job_asks_only_for_a_sample_id_refuses_an_empty_or_unknown_one_and_logs_the_raw_line(pipeline):
    from dagster_project.jobs import trace_sample_job

    settings, instance, _ = pipeline
    job = trace_sample_job(settings)
    assert set(job.run_config_schema.config_type.fields) == {"sample_id"}  # the launchpad asks for it alone
    sample = pl.read_parquet(settings.local_root / "published" / "sft_dataset" / "current" / "*.parquet").row(
        0, named=True
    )
    result = job.execute_in_process(run_config={"sample_id": sample["sample_id"]}, instance=instance)
    raw = _raw_line(settings.raw_path / sample["raw_file"], sample["raw_record"])
    assert f"  line       {raw[:300]}" in result.output_for_node("trace_sample_op")
    for refused, said in [(" ", "sample_id is empty"), ("no-such-id", "no trajectory or sample 'no-such-id'")]:
        with pytest.raises(dg.DagsterInvalidConfigError, match=said):
            dg.validate_run_config(job, {"sample_id": refused})


def test_progress_lines_start_after_a_few_seconds_and_are_at_most_one_as_often(monkeypatch):
    from cowork_assets.runtime import progress

    clock = iter([0.0, 1.0, 4.9, 5.0, 7.0, 10.5, 10.6])  # the first: when the step made its progress log
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    said: list[str] = []
    log = progress.throttled(said.append, seconds=5.0)
    for i in range(6):
        log(f"step {i}")
    assert said == ["step 2", "step 4"]


def test_every_count_the_summary_prints_is_what_the_tables_hold(tmp_path, capsys):
    """A corpus whose last batch repeats another batch's runs (same trajectory ids, another batch)."""
    import shutil

    from cowork_assets.synthetic.generate import generate

    raw = tmp_path / "raw"
    generate(raw, trajectories=60, batches=2, seed=3)
    first = sorted(p for p in raw.iterdir() if p.is_dir())[0]
    shutil.copytree(first, raw / "zz-redelivered")
    data = tmp_path / "curated"
    assert (
        main(["run", "--raw-root", str(raw), "--data-root", str(data), "--dagster-home", str(tmp_path / "home")]) == 0
    )
    out = capsys.readouterr().out

    def number(pattern):
        return int(re.search(pattern, out, re.M).group(1))

    tables = data / "tables"
    runs = pl.read_parquet(tables / "trajectories" / "*" / "data.parquet")
    sft = pl.read_parquet(data / "published" / "sft_dataset" / "current" / "*.parquet")
    excluded = pl.read_parquet(tables / "exclusions" / "bucket=*" / "data.parquet").filter(pl.col("dataset") == "sft")
    assert runs.select("trajectory_id").n_unique() < runs.height  # the same ids in two batches
    assert number(r"^trajectories +(\d+) +3$") == runs.height
    assert (
        number(r"^quarantined raw records: (\d+)$") == pl.read_parquet(tables / "quarantine" / "*" / "*.parquet").height
    )
    teachers = runs.filter(pl.col("teacher_role") == "teacher")
    selected = teachers.join(excluded, on=["batch", "trajectory_id"], how="anti").height
    assert re.search(rf"^selected for SFT: {sft.height} of {teachers.height} teacher runs", out, re.M)
    assert selected == sft.height > 0
    assert number(r"^published sft_dataset \(current version\): (\d+) rows$") == sft.height
    assert number(r"^skipped inputs \(no format reads them\): (\d+)$") == 3  # the generator's files at the root
