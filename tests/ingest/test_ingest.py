"""Ingesting batches: exact counts, exact quarantine, faithful tables, bounded chunks, atomic writes."""

import json
import os
from pathlib import Path

import orjson
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from cowork_assets.ingest import flatten
from cowork_assets.ingest.batch import BATCH_TABLES, ingest_batch
from cowork_assets.store.raw_files import discover_batches, iter_raw_lines
from cowork_assets.store.registry import TABLES


@pytest.fixture(scope="module")
def ingested(default_raw, tmp_path_factory):
    out = tmp_path_factory.mktemp("ingest")
    reports = {b: ingest_batch(default_raw, b, out) for b in discover_batches(default_raw)}
    return out, reports


def raw_line(raw_root, row) -> bytes:
    return next(l.data for l in iter_raw_lines(raw_root / row["raw_file"]) if l.record == row["raw_record"])


def load(out, table) -> pl.DataFrame:
    return pl.read_parquet(out / "tables" / table / "batch=*" / "data.parquet")


def test_counts_equal_the_manifest_per_batch(ingested, manifest):
    _, reports = ingested
    assert sorted(reports) == sorted(manifest["batches"])
    for batch, r in reports.items():
        expected = manifest["batches"][batch]
        assert (r.raw_records, r.parsed, r.quarantined) == (
            expected["records"],
            expected["parsed"],
            sum(expected["quarantined"].values()),
        )
        assert dict(r.reasons) == expected["quarantined"]
        assert r.balanced and r.rows["trajectories"] == r.parsed


def test_every_malformed_line_is_quarantined_where_labelled_and_nothing_else(ingested, labels):
    out, _ = ingested
    got = {(r["raw_file"], r["raw_record"], r["reason"]) for r in load(out, "quarantine").iter_rows(named=True)}
    expected = {(l["raw_file"], l["raw_record"], l["reason"]) for l in labels if l["kind"] == "malformed"}
    assert got == expected


def test_lineage_points_at_the_raw_line(ingested, default_raw):
    out, _ = ingested
    trajs = load(out, "trajectories")
    for row in trajs.sample(20, seed=1).iter_rows(named=True):
        assert orjson.loads(raw_line(default_raw, row))["trajectory_id"] == row["trajectory_id"]


def test_messages_round_trip_with_normalised_arguments(ingested, default_raw):
    out, _ = ingested
    messages = load(out, "messages")
    trajs = load(out, "trajectories").sample(25, seed=2)
    for row in trajs.iter_rows(named=True):
        original = orjson.loads(raw_line(default_raw, row))["messages"]
        got = messages.filter(pl.col("trajectory_id") == row["trajectory_id"]).sort("message_index")
        assert got["message_index"].to_list() == list(range(len(original)))
        for m, g in zip(original, got.iter_rows(named=True)):
            assert (g["role"], g["content"], g["tool_call_id"], g["name"]) == (
                m["role"],
                m.get("content"),
                m.get("tool_call_id"),
                m.get("name"),
            )
            calls = m.get("tool_calls") or []
            assert [(c["id"], c["function"]["name"]) for c in calls] == [(c["id"], c["name"]) for c in g["tool_calls"]]
            for c, gc in zip(calls, g["tool_calls"]):
                args = c["function"]["arguments"]
                assert isinstance(gc["arguments"], str)
                assert json.loads(gc["arguments"]) == (json.loads(args) if isinstance(args, str) else args)
                # a string is kept as sent; an object becomes compact JSON, as producers' strings mostly are
                assert gc["arguments"] == (args if isinstance(args, str) else orjson.dumps(args).decode())


def test_counts_are_exact(ingested):
    out, _ = ingested
    messages = load(out, "messages")
    for row in messages.filter(pl.col("role") == "tool").head(30).iter_rows(named=True):
        assert row["chars"] == len(row["content"])
    trajs = load(out, "trajectories")
    per = messages.group_by("trajectory_id").agg(pl.len().alias("n"), pl.col("chars").sum().alias("c"))
    joined = trajs.join(per, on="trajectory_id")
    assert joined.height == trajs.height
    assert (joined["n_messages"] == joined["n"]).all() and (joined["chars_total"] == joined["c"]).all()


def test_tool_calls_carry_the_observation_that_answered_them(ingested):
    out, _ = ingested
    calls, messages = load(out, "tool_calls"), load(out, "messages")
    assert calls.height == messages["tool_calls"].list.len().sum()
    answered = calls.filter(pl.col("observation_index").is_not_null())
    assert answered.height == calls.height  # the generator answers every call
    obs = messages.filter(pl.col("role") == "tool").select(
        "trajectory_id",
        pl.col("message_index").alias("observation_index"),
        pl.col("tool_call_id").alias("call_id"),
        pl.col("content").alias("expected"),
    )
    joined = answered.join(obs, on=["trajectory_id", "observation_index"])
    assert joined.height == answered.height
    assert (joined["call_id"] == joined["call_id_right"]).all() and (joined["observation"] == joined["expected"]).all()
    assert (joined["observation_chars"] == joined["expected"].str.len_chars()).all()


def test_task_packages_are_distinct_per_batch_and_counted(ingested):
    out, _ = ingested
    packages, trajs = load(out, "task_packages"), load(out, "trajectories")
    assert packages.select("batch", "task_hash").is_unique().all()
    per = trajs.group_by("batch", "task_hash").len()
    joined = packages.join(per, on=["batch", "task_hash"])
    assert joined.height == packages.height == per.height
    assert (joined["n_trajectories"] == joined["len"]).all()


@pytest.mark.parametrize("chunk_records", [1, 100])
def test_one_package_however_its_keys_are_ordered_or_spaced(tmp_path, chunk_records):
    from tests.ingest.test_record import good

    raw = tmp_path / "raw" / "b"
    raw.mkdir(parents=True)
    tasks = [good()["task"], dict(reversed(good()["task"].items()))]
    lines = [
        json.dumps(good(trajectory_id=f"t{i}", task=tasks[i % 2]), indent=None if i < 2 else 1).replace("\n", "")
        for i in range(3)
    ]
    (raw / "a.jsonl").write_text("\n".join(lines) + "\n")
    ingest_batch(tmp_path / "raw", "b", tmp_path / "out", chunk_records=chunk_records)
    packages = TABLES["task_packages"].read(tmp_path / "out", "b")
    trajectories = TABLES["trajectories"].read(tmp_path / "out", "b")
    assert packages.select("task_id", "n_trajectories", "first_trajectory_id").rows() == [("x-1", 3, "t0")]
    assert trajectories["task_hash"].to_list() == packages["task_hash"].to_list() * 3


def test_each_distinct_task_text_is_parsed_once_per_batch(tmp_path, monkeypatch):
    from tests.ingest.test_record import good

    parsed = []
    real = flatten._parse_packages
    monkeypatch.setattr(flatten, "_parse_packages", lambda texts: parsed.extend(texts) or real(texts))
    raw = tmp_path / "raw" / "b"
    raw.mkdir(parents=True)
    other = good()["task"] | {"task_id": "x-2"}
    tasks = [good()["task"], other, good()["task"], dict(reversed(good()["task"].items())), other]
    (raw / "a.jsonl").write_text(
        "".join(json.dumps(good(trajectory_id=f"t{i}", task=t)) + "\n" for i, t in enumerate(tasks))
    )
    ingest_batch(tmp_path / "raw", "b", tmp_path / "out", chunk_records=1)  # one chunk per line
    assert [orjson.loads(text)["task_id"] for text in parsed] == ["x-1", "x-2", "x-1"]  # the third: keys reordered
    packages = TABLES["task_packages"].read(tmp_path / "out", "b")
    assert packages.select("task_id", "n_trajectories", "first_trajectory_id").rows() == [
        ("x-1", 3, "t0"),
        ("x-2", 2, "t1"),
    ]
    trajectories = TABLES["trajectories"].read(tmp_path / "out", "b")
    assert trajectories["task_id"].to_list() == ["x-1", "x-2", "x-1", "x-1", "x-2"]


def test_output_does_not_depend_on_chunk_size(default_raw, ingested, tmp_path):
    out, _ = ingested
    batch = discover_batches(default_raw)[0]
    ingest_batch(default_raw, batch, tmp_path, chunk_records=7)
    for table in BATCH_TABLES:
        a = TABLES[table].read(out, batch)
        b = TABLES[table].read(tmp_path, batch)
        if table == "task_packages":
            a, b = a.sort("task_hash"), b.sort("task_hash")
        assert_frame_equal(a, b)


def test_reading_is_chunked(default_raw, tmp_path, monkeypatch):
    sizes = []
    real = flatten.flatten_chunk
    monkeypatch.setattr(flatten, "flatten_chunk", lambda raw, *a, **k: sizes.append(raw.height) or real(raw, *a, **k))
    batch = discover_batches(default_raw)[0]
    report = ingest_batch(default_raw, batch, tmp_path, chunk_records=10)
    assert max(sizes) == 10 and sum(sizes) == report.parsed


def test_a_crash_mid_batch_keeps_the_previous_output(default_raw, tmp_path, monkeypatch):
    batch = discover_batches(default_raw)[0]
    ingest_batch(default_raw, batch, tmp_path, chunk_records=10)
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]  # scratch files gone on success too
    before = {t: Path(TABLES[t].file(tmp_path, batch)).read_bytes() for t in BATCH_TABLES}
    calls = []

    def explode(*a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("disk on fire")
        return real(*a, **k)

    real = flatten.flatten_chunk
    monkeypatch.setattr(flatten, "flatten_chunk", explode)
    with pytest.raises(RuntimeError):
        ingest_batch(default_raw, batch, tmp_path, chunk_records=10)
    assert {t: Path(TABLES[t].file(tmp_path, batch)).read_bytes() for t in BATCH_TABLES} == before
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def _traj(tid: str, content: str = "hi") -> bytes:
    return orjson.dumps(
        {
            "schema": "cowork.trajectory/v1",
            "trajectory_id": tid,
            "task": {"task_id": "t", "category": "single_turn", "request": "r"},
            "teacher": {"model": "m", "role": "teacher"},
            "messages": [{"role": "user", "content": content}, {"role": "assistant", "content": "ok"}],
        }
    )


def test_repeated_trajectory_id_keeps_the_first(tmp_path):
    raw = tmp_path / "raw" / "b"
    raw.mkdir(parents=True)
    (raw / "a.jsonl").write_bytes(_traj("same") + b"\n" + _traj("other") + b"\n" + _traj("same", "again") + b"\n")
    r = ingest_batch(tmp_path / "raw", "b", tmp_path / "out", chunk_records=2)
    q = TABLES["quarantine"].read(tmp_path / "out", "b")
    assert r.parsed == 2 and q.select("raw_record", "reason").rows() == [(3, "duplicate_trajectory_id")]
    assert "a.jsonl:1" in q["detail"][0]


def test_a_reader_that_fails_on_a_file_quarantines_that_file_and_the_batch_goes_on(tmp_path, monkeypatch):
    """A reader's bug on input it did not foresee: the file's unread rest is one `reader_error` record, named for a
    bug report; the batch's other files are read and every record is accounted for."""
    from cowork_assets.ingest.formats import cowork, recount_batch

    raw = tmp_path / "raw" / "b"
    raw.mkdir(parents=True)
    (raw / "a.jsonl").write_bytes(_traj("a1") + b"\n")
    (raw / "b.jsonl").write_bytes(_traj("b1") + b"\n" + _traj("b2") + b"\n")
    read = cowork.records

    def failing(sample, batch):
        if sample.path.name == "a.jsonl":
            raise RuntimeError("an unforeseen field")
        return read(sample, batch)

    monkeypatch.setattr(cowork, "records", failing)
    r = ingest_batch(tmp_path / "raw", "b", tmp_path / "out")
    q = TABLES["quarantine"].read(tmp_path / "out", "b")
    assert q.select("raw_file", "raw_record", "reason", "detail").rows() == [
        ("b/a.jsonl", 1, "reader_error", "the cowork reader failed past record 0 (RuntimeError: an unforeseen field)")
    ]
    assert sorted(TABLES["trajectories"].read(tmp_path / "out", "b")["trajectory_id"]) == ["b1", "b2"]
    assert (r.raw_records, r.parsed, r.quarantined) == (3, 2, 1) == (recount_batch(tmp_path / "raw", "b"), 2, 1)


def test_a_chunk_reaches_the_parser_whole_over_many_writes_even_short_ones(monkeypatch):
    lines = [_traj(f"t{i}", "x" * (i % 50)) for i in range(1500)]  # more lines than one writev takes
    writev, calls = os.writev, []

    def short(fd, buffers):  # the kernel may write less than asked: half the buffers here
        calls.append(len(buffers))
        return writev(fd, buffers[: len(buffers) // 2])

    monkeypatch.setattr(os, "writev", short)
    raw = flatten.read_lines(lines)
    assert raw["trajectory_id"].to_list() == [f"t{i}" for i in range(1500)]
    assert raw["messages"].list.first().struct.field("content").to_list()[:3] == ["", "x", "xx"]
    assert len(calls) == -(-2 * len(lines) // os.sysconf("SC_IOV_MAX")) > 1


def test_a_record_with_a_repeated_key_is_quarantined_alone(tmp_path):
    # The contract's JSON parser keeps a repeated key's last value; rather than guess, the record is
    # unreadable, and only it: the chunk is re-read line by line.
    raw = tmp_path / "raw" / "b"
    raw.mkdir(parents=True)
    lines = [_traj(f"t{i}", "x") for i in range(4)]
    lines[2] = lines[2].replace(b'"trajectory_id":', b'"trajectory_id":"other","trajectory_id":', 1)
    (raw / "a.jsonl").write_bytes(b"\n".join(lines))
    r = ingest_batch(tmp_path / "raw", "b", tmp_path / "out")
    q = TABLES["quarantine"].read(tmp_path / "out", "b")
    assert (r.parsed, r.quarantined) == (3, 1)
    assert q.select("raw_record", "reason").rows() == [(3, "unreadable_record")]
    assert q["detail"][0].startswith("Invalid Input Error: JSON transform error: Object {")
    assert q["detail"][0].endswith('has duplicate key "trajectory_id"') and str(tmp_path) not in q["detail"][0]
    assert sorted(TABLES["trajectories"].read(tmp_path / "out", "b")["trajectory_id"]) == [
        "t0",
        "t1",
        "t3",
    ]


def test_empty_batch_writes_empty_tables(tmp_path):
    (tmp_path / "raw" / "b").mkdir(parents=True)
    (tmp_path / "raw" / "b" / "empty.jsonl").write_bytes(b"")
    r = ingest_batch(tmp_path / "raw", "b", tmp_path / "out")
    assert r.raw_records == 0 and r.balanced
    assert all(TABLES[t].read(tmp_path / "out", "b").height == 0 for t in BATCH_TABLES)


@pytest.mark.parametrize("in_memory", [True, False], ids=["read", "scanned"])
def test_schema_validation_reports_every_failure_with_its_row_in_the_file(tmp_path, monkeypatch, in_memory):
    import pyarrow.parquet as pq

    from cowork_assets.ingest.schemas import Messages, Trajectories
    from cowork_assets.store import models
    from cowork_assets.store.models import polars_schema, validate_table

    # A small file is validated in memory, a large one over a scan: the same failures either way.
    monkeypatch.setattr(models, "IN_MEMORY_BYTES", models.IN_MEMORY_BYTES if in_memory else 0)
    read, original = [], pl.read_parquet
    monkeypatch.setattr(pl, "read_parquet", lambda *a, **k: read.append(a) or original(*a, **k))

    good = {
        "batch": "b",
        "trajectory_id": "t",
        "message_index": 0,
        "role": "user",
        "content": "hi",
        "tool_calls": [],
        "tool_call_id": None,
        "name": None,
        "chars": 2,
    }
    frame = pl.DataFrame(
        [good, good | {"message_index": 1, "role": "robot"}, good | {"message_index": 2, "chars": -1}],
        schema=polars_schema(Messages),
    )
    path = tmp_path / "messages.parquet"
    frame.write_parquet(path, row_group_size=1)
    assert pq.ParquetFile(path).num_row_groups == 3
    rows, failures = validate_table(str(path), Messages)
    assert rows == 3 and sorted(failures.select("column", "index").rows()) == [("chars", 2), ("role", 1)]
    frame.head(1).with_columns(pl.col("chars").cast(pl.Int32)).write_parquet(path)
    assert validate_table(str(path), Messages)[1].select("column", "failure_case").rows() == [("chars", "Int32")]
    frame.head(1).write_parquet(path)
    assert validate_table(str(path), Messages) == (1, None)
    trajectories = pl.DataFrame(schema=polars_schema(Trajectories))
    trajectories.write_parquet(path)
    assert validate_table(str(path), Trajectories) == (0, None)
    row = {
        "batch": "b",
        "trajectory_id": "t",
        "task_id": "x",
        "task_hash": "0" * 16,
        "category": "c",
        "teacher_model": "m",
        "teacher_role": "teacher",
        "n_messages": 1,
        "n_user_turns": 1,
        "n_tool_calls": 0,
        "chars_total": 2,
        "chars_observations": 0,
        "raw_file": "b/a.jsonl",
        "raw_record": 1,
    }
    pl.DataFrame([row, row | {"raw_record": 2}], schema=polars_schema(Trajectories)).write_parquet(
        path, row_group_size=1
    )
    failures = validate_table(str(path), Trajectories)[1]  # uniqueness spans row groups
    assert failures.select("check", "column", "index").rows() == [
        ("field_uniqueness", "trajectory_id", i) for i in (0, 1)
    ]
    assert len(read) == (5 if in_memory else 0)


def test_keyed_rows_are_read_from_their_own_batch_in_the_order_asked(tmp_path, monkeypatch):
    import cowork_assets.store.storage as storage

    root = str(tmp_path)
    for batch, hashes in {"b1": ["h1", "h2", "h3"], "b2": ["h2", "h3", "h4"]}.items():
        frame = pl.DataFrame({"batch": batch, "task_hash": hashes, "state": [f"{batch}:{h}" for h in hashes]})
        storage.write_parquet_atomic(frame, TABLES["task_packages"].file(root, batch))
    reads = []
    scan = storage.pl.scan_parquet
    monkeypatch.setattr(storage.pl, "scan_parquet", lambda path, **k: reads.append(path) or scan(path, **k))
    keys = pl.DataFrame({"batch": ["b2", "b1", "b2"], "task_hash": ["h4", "h1", "h2"]})
    found = TABLES["task_packages"].read_keyed(root, keys, "task_hash")
    assert found.to_dicts() == [
        {"batch": "b2", "task_hash": "h4", "state": "b2:h4"},
        {"batch": "b1", "task_hash": "h1", "state": "b1:h1"},
        {"batch": "b2", "task_hash": "h2", "state": "b2:h2"},  # b2's copy of h2, not b1's
    ]
    # one scan of the files of the batches asked for, in the order asked
    assert reads == [[TABLES["task_packages"].file(root, "b2"), TABLES["task_packages"].file(root, "b1")]]
    assert TABLES["task_packages"].read_keyed(root, keys.head(0), "task_hash").columns == found.columns


def test_first_copies_are_each_keys_rows_in_its_first_batch_a_group_of_batches_at_a_time(tmp_path):
    import cowork_assets.store.storage as storage

    root = str(tmp_path)
    copies = {"b1": [("t1", "a"), ("t2", "a")], "b2": [("t2", "b"), ("t3", "b"), ("t3", "c")], "b3": [("t1", "d")]}
    for batch, rows in copies.items():
        frame = pl.DataFrame(rows, schema=["task_id", "state"], orient="row").with_columns(batch=pl.lit(batch))
        storage.write_parquet_atomic(frame, TABLES["task_packages"].file(root, batch))
    frames = list(TABLES["task_packages"].first_copies(root, "task_id"))
    # small batches together (b3 holds no first copy)
    assert [f["batch"].unique(maintain_order=True).to_list() for f in frames] == [["b1", "b2"]]
    found = pl.concat(frames).sort("task_id", "state").select("task_id", "batch", "state").rows()
    assert found == [("t1", "b1", "a"), ("t2", "b1", "a"), ("t3", "b2", "b"), ("t3", "b2", "c")]


def test_batch_groups_hold_whole_batches_in_order_up_to_a_row_count_and_a_larger_batch_alone():
    from cowork_assets.store.table import batch_groups

    sizes = {"a": 2, "d": 6, "b": 3, "c": 1, "e": 1}
    rows = pl.DataFrame({"batch": [b for b, n in sizes.items() for _ in range(n)]}).with_row_index("row")
    rows = pl.concat([rows.filter(pl.col("batch") != "b"), rows.filter(pl.col("batch") == "b")])  # b's rows last
    groups = list(batch_groups(rows, max_runs=5))
    assert [g["batch"].unique(maintain_order=True).to_list() for g in groups] == [["a"], ["d"], ["c", "e", "b"]]
    assert [g["row"].to_list() for g in groups] == [[0, 1], [2, 3, 4, 5, 6, 7], [11, 12, 8, 9, 10]]
    assert list(batch_groups(rows.head(0), 5)) == []


def test_a_sorted_spill_gives_back_every_row_in_key_order_a_bucket_at_a_time(tmp_path):
    from cowork_assets.store.storage import SortedSpill

    rows = pl.DataFrame({"task": [f"t{i % 37:02d}" for i in range(500)], "sample": [f"s{i:03d}" for i in range(500)]})
    shuffled = rows.sample(fraction=1.0, shuffle=True, seed=7)
    spill = SortedSpill(str(tmp_path / "out.parquet"), rows.to_arrow().schema, pl.col("task"), rows["task"], 60)
    for part in shuffled.iter_slices(70):  # written in any order, as batches would be
        spill.write(part)
    parts = list(spill.sorted("sample"))
    assert spill.rows == 500 and 8 <= len(parts) <= 10  # ~500/60 buckets; a task is never split
    assert all(p.height <= 60 + 14 for p in parts)  # a bucket holds ~60 rows (plus the rest of its last task)
    assert_frame_equal(pl.concat(parts), rows.sort("task", "sample"))
    assert list(tmp_path.iterdir()) == []  # the scratch files are gone once read
