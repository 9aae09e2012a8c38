"""The hostile-input corpus (tests/hostile/corpus, one batch folder per case) and generated extremes:
every case ends in a defined outcome, and the per-batch accounting balances."""

import os
import shutil
from pathlib import Path

import dagster as dg
import orjson
import polars as pl
import pytest

from cowork_assets.ingest.batch import ingest_batch
from cowork_assets.store.raw_files import discover_batches, not_batches
from cowork_assets.store.registry import TABLES
from tests.conftest import TESTS
from tests.helpers import call, result, trajectory

CORPUS = TESTS / "hostile" / "corpus"

# batch -> (parsed, blank lines, [(file, record, reason)], ignored files)
EXPECTED = {
    "bom": (2, 0, [], []),
    "crlf": (3, 0, [], []),
    "blank-and-empty": (2, 5, [], []),
    "truncated-gzip": (1, 0, [("a.jsonl.gz", 2, "truncated_gzip")], []),
    "corrupt-gzip": (1, 0, [("a.jsonl.gz", 2, "corrupt_gzip")], []),
    "not-gzip": (0, 0, [("a.jsonl.gz", 1, "corrupt_gzip")], []),
    "invalid-utf8": (1, 0, [("a.jsonl", 2, "invalid_utf8")], []),
    "lone-surrogate": (1, 0, [("a.jsonl", 1, "lone_surrogate")], []),
    "deep-nesting": (1, 0, [("a.jsonl", 1, "too_deeply_nested")], []),
    "wrong-types": (1, 0, [("a.jsonl", r, "wrong_type") for r in (1, 2, 3, 4)], []),
    "unknown-role": (1, 0, [("a.jsonl", 1, "invalid_value")], []),
    "duplicate-ids": (2, 0, [("a.jsonl", 2, "duplicate_trajectory_id"), ("b.jsonl", 1, "duplicate_trajectory_id")], []),
    "orphan-result": (1, 0, [], []),
    "bad-json-mid-file": (2, 0, [("a.jsonl", 2, "bad_json"), ("a.jsonl", 3, "bad_json")], []),
    "not-json-files": (
        1,
        0,
        [],
        [
            ("data.csv", "not JSON Lines (*.jsonl, *.jsonl.gz) or a JSON document any format reads"),
            ("notes.txt", "not JSON Lines (*.jsonl, *.jsonl.gz) or a JSON document any format reads"),
            ("other.json", "a JSON object (hello) that no format reads"),
        ],
    ),
    "symlink-outside": (1, 0, [], [("link.jsonl", "resolves outside the raw root")]),
    "name with spaces": (1, 0, [], []),
    "ünïcødé-batch": (1, 0, [], []),
}


def test_batch_discovery_names_what_it_skips():
    assert set(discover_batches(CORPUS)) == set(EXPECTED)
    assert [name for name, _ in not_batches(CORPUS)] == ["bad...name"]


@pytest.mark.parametrize("batch", sorted(EXPECTED))
def test_each_hostile_case_has_a_defined_outcome(batch, tmp_path):
    parsed, blank, quarantined, ignored = EXPECTED[batch]
    report = ingest_batch(CORPUS, batch, tmp_path)
    q = TABLES["quarantine"].read(tmp_path, batch)
    got = sorted(
        (f.split("/", 1)[1], r, reason) for f, r, reason in q.select("raw_file", "raw_record", "reason").rows()
    )
    skipped = sorted((f.split("/", 1)[1], why) for f, why in report.skipped)
    assert (report.parsed, report.blank_lines, got, skipped) == (parsed, blank, sorted(quarantined), ignored)
    table = TABLES["skipped_inputs"].read(tmp_path, batch)
    assert sorted(table.select("raw_file", "reason").rows()) == sorted(report.skipped)
    assert report.balanced and report.raw_records == parsed + len(quarantined)
    assert (q["detail"].str.len_chars() > 0).all() and (q["excerpt"].str.len_chars() <= 200).all()


def test_the_whole_corpus_runs_through_the_pipeline(tmp_path):
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    raw = tmp_path / "raw"
    shutil.copytree(CORPUS, raw, symlinks=True)
    shutil.copy(CORPUS.parent / "outside.jsonl", tmp_path / "outside.jsonl")
    settings = CurateSettings(raw_root=str(raw), data_root=str(tmp_path / "data"))
    messages = []
    outcome = materialize_all(settings, ensure_instance(tmp_path / "home"), echo=messages.append)
    assert outcome.failed == {} and sorted(outcome.batches) == sorted(EXPECTED)
    assert any("skipped 'bad...name' at the raw root" in m for m in messages)
    findings = TABLES["structure_findings"].scan(settings.root).collect()
    assert "orphan_result" in findings.filter(pl.col("trajectory_id") == "orphan-1")["kind"].to_list()
    sft = pl.read_parquet(settings.local_root / "published" / "sft_dataset" / "current" / "*.parquet")
    excluded = TABLES["exclusions"].read(settings.root)
    parsed = TABLES["trajectories"].scan(settings.root).collect()
    explained = set(excluded.filter(pl.col("dataset") == "sft").select("batch", "trajectory_id").rows())
    published = set(sft.select("batch", "trajectory_id").rows())
    assert sft["sample_id"].is_unique().all() and not published & explained
    assert published | explained == set(parsed.select("batch", "trajectory_id").rows())  # every run accounted for
    assert set(
        excluded.filter(pl.col("trajectory_id") == "orphan-1", pl.col("criterion") == "structure")["reason"]
    ) == {
        "orphan_result",
        "unanswered_call",
        "tool_message_out_of_order",
    }


def test_a_50_mb_observation_and_10_000_tool_calls(tmp_path):
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    record = '{"id": "r_%06d", "note": "a plain sentence about an order and its items", "amount": "%d.50"}'
    big = "[" + ",".join(record % (i, i % 9000 + 1000) for i in range(540_000)) + "]"
    assert len(big) > 50_000_000
    one = trajectory(
        [
            {"role": "user", "content": "Send order r_479999."},
            call("lookup", {"q": "all"}),
            result(big),
            call("send", {"id": "r_530001"}, "c2"),
            result("ok", "c2"),
            {"role": "assistant", "content": "sent"},
        ],
        tid="huge-observation",
    )
    steps = [{"role": "user", "content": "go"}]
    for i in range(10_000):
        steps += [call("step", {"i": i, "ref": f"s_{i:05d}"}, f"k{i}"), result(f'{{"next": "s_{i + 1:05d}"}}', f"k{i}")]
    many = trajectory(steps + [{"role": "assistant", "content": "done"}], tid="many-calls")
    (tmp_path / "raw" / "big").mkdir(parents=True)
    (tmp_path / "raw" / "big" / "a.jsonl").write_bytes(orjson.dumps(one) + b"\n" + orjson.dumps(many) + b"\n")
    settings = CurateSettings(raw_root=str(tmp_path / "raw"), data_root=str(tmp_path / "data"))
    outcome = materialize_all(settings, ensure_instance(tmp_path / "home"), echo=lambda _: None)
    assert outcome.failed == {}
    curated = TABLES["curated_messages"].read(settings.root, "big")
    huge = curated.filter(pl.col("trajectory_id") == "huge-observation", pl.col("role") == "tool").row(0, named=True)
    assert huge["original_chars"] == len(big) and huge["kept_chars"] == 1000 and "r_530001" in huge["content"]
    stats = TABLES["sample_stats"].read(settings.root, "big")
    assert dict(stats.select("trajectory_id", "verdict").rows()) == {
        "huge-observation": "kept",
        "many-calls": "dropped",
    }
    assert TABLES["messages"].read(settings.root, "big").height == 6 + 20_002


def test_a_batch_folder_that_resolves_outside_the_raw_root_is_never_a_batch(tmp_path):
    from cowork_assets.ingest.batch import record_root_skips, root_skips_file

    raw, elsewhere = tmp_path / "raw", tmp_path / "elsewhere"
    (raw / "real").mkdir(parents=True)
    elsewhere.mkdir()
    (raw / "linked").symlink_to(elsewhere, target_is_directory=True)
    (raw / "stray.jsonl").write_text("{}\n")
    assert discover_batches(raw) == ["real"]
    assert not_batches(raw) == [
        ("linked", "resolves outside the raw root (a symlink): never a batch"),
        ("stray.jsonl", "a file at the raw root: batches are folders"),
    ]
    assert record_root_skips(raw, str(tmp_path / "out")) == 2
    table = pl.read_parquet(root_skips_file(str(tmp_path / "out")))
    assert table.rows() == [
        ("_raw_root", "linked", "resolves outside the raw root (a symlink): never a batch"),
        ("_raw_root", "stray.jsonl", "a file at the raw root: batches are folders"),
    ]


def test_batch_names_a_reader_would_expand_or_a_filesystem_refuse_are_not_batches(tmp_path):
    """A batch `*` once took in every other batch's rows (a partition path is a glob to polars and DuckDB)."""
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    raw = tmp_path / "raw"
    names = ["good", "*", "[ab]", "a?b", "{x,y}", "n" * 201]
    for i, name in enumerate(names):
        (raw / name).mkdir(parents=True)
        run = trajectory([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}], tid=f"t{i}")
        (raw / name / "a.jsonl").write_bytes(orjson.dumps(run) + b"\n")
    assert discover_batches(raw) == ["good"]
    glob = "batch folder names may not contain the glob characters * ? [ ] { } (readers would expand them)"
    assert not_batches(raw) == sorted(
        [(n, glob) for n in names[1:5]]
        + [("n" * 201, "batch folder names may have at most 200 bytes (its partition folder must fit)")]
    )
    settings = CurateSettings(raw_root=str(raw), data_root=str(tmp_path / "out"), accept_ungraded=True)
    assert materialize_all(settings, ensure_instance(tmp_path / "home"), echo=lambda _: None).failed == {}
    stats = TABLES["sample_stats"].scan(settings.root).collect()
    assert stats["trajectory_id"].to_list() == ["t0"]  # no batch read another's rows


PEAK = """
import resource, sys
from pathlib import Path
from cowork_assets.ingest.batch import ingest_batch
r = ingest_batch(Path(sys.argv[1]), sys.argv[2], sys.argv[3], max_record_bytes=int(sys.argv[4]))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(r.raw_records, r.parsed, r.quarantined, sorted(r.reasons.items()), peak)
"""


def _peak_ingest(raw, batch, out, max_bytes) -> tuple[list, int]:
    """Ingest a batch in a child process: (its report's counts, its peak resident memory in MB)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", PEAK, str(raw), batch, str(out), str(max_bytes)],
        capture_output=True,
        text=True,
        check=True,
    )
    counts, peak_kb = done.stdout.strip().rsplit(" ", 1)
    return counts, int(peak_kb) // 1024


def test_a_gzip_bomb_and_a_many_lines_bomb_stay_within_the_record_bound(tmp_path):
    """A 1 MB .jsonl.gz inflating to one huge line once took 8.7 GB, 5 million `{}` lines 3.2 GB."""
    import gzip

    raw, limit = tmp_path / "raw", 32 << 20
    for name in ("small", "bomb", "lines"):
        (raw / name).mkdir(parents=True)
    (raw / "small" / "a.jsonl").write_text("{}\n")
    with gzip.open(raw / "bomb" / "a.jsonl.gz", "wb", compresslevel=1) as fh:  # ~1.3 MB on disk
        fh.write(b'{"trajectory_id": "x", "pad": "')
        for _ in range(300):
            fh.write(b"a" * (1 << 20))
        fh.write(b'"}\n{}\n')
    with gzip.open(raw / "lines" / "a.jsonl.gz", "wb", compresslevel=9) as fh:
        fh.write(b"{}\n" * 500_000)
    assert (raw / "bomb" / "a.jsonl.gz").stat().st_size < 2 << 20
    _, baseline = _peak_ingest(raw, "small", tmp_path / "out0", limit)
    report, bomb = _peak_ingest(raw, "bomb", tmp_path / "out1", limit)
    assert report == "2 0 2 [('missing_field', 1), ('too_large', 1)]"
    report, many = _peak_ingest(raw, "lines", tmp_path / "out2", limit)
    assert report == "500000 0 500000 [('missing_field', 500000)]"
    # held at most: the record bound (a line is cut there, never read whole) and a part of the quarantine rows
    assert bomb - baseline < (limit >> 20) + 60, (baseline, bomb)
    assert many - baseline < 150, (baseline, many)
    q = TABLES["quarantine"].read(str(tmp_path / "out1"), "bomb").row(0, named=True)
    assert q["reason"] == "too_large" and q["raw_record"] == 1 and "more than 33554432 bytes" in q["detail"]


def test_a_document_nested_past_the_recursion_limit_is_one_quarantined_record_for_the_recount_too(tmp_path):
    from cowork_assets.ingest.formats import recount_batch

    (tmp_path / "raw" / "b").mkdir(parents=True)
    (tmp_path / "raw" / "b" / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    report = ingest_batch(tmp_path / "raw", "b", str(tmp_path / "out"))
    assert (report.raw_records, report.quarantined, sorted(report.reasons)) == (1, 1, ["bad_json"])
    assert recount_batch(tmp_path / "raw", "b") == 1  # it raised RecursionError and failed the batch's check


def test_a_json_document_over_the_record_bound_is_quarantined_unread(tmp_path):
    from cowork_assets.ingest.formats import recount_batch

    (tmp_path / "raw" / "b").mkdir(parents=True)
    (tmp_path / "raw" / "b" / "big.json").write_bytes(b'{"simulations": [' + b"1," * 3000 + b"1]}")
    report = ingest_batch(tmp_path / "raw", "b", str(tmp_path / "out"), max_record_bytes=4096)
    assert (report.raw_records, report.quarantined, sorted(report.reasons)) == (1, 1, ["too_large"])
    assert recount_batch(tmp_path / "raw", "b", 4096) == 1


def test_a_read_error_or_a_link_loop_is_accounted_for_and_never_fails_the_batch(tmp_path, monkeypatch):
    import errno

    from cowork_assets.ingest import recount
    from cowork_assets.ingest.formats import recount_batch
    from cowork_assets.store import raw_files

    raw = tmp_path / "raw"
    (raw / "b").mkdir(parents=True)
    good = trajectory([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}], tid="t1")
    other = trajectory([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}], tid="t2")
    (raw / "b" / "a.jsonl").write_bytes(orjson.dumps(good) + b"\n{}\n" + b"never read\n")
    (raw / "b" / "c.jsonl").write_bytes(orjson.dumps(other) + b"\n")
    (raw / "b" / "loop1").symlink_to("loop2")
    (raw / "b" / "loop2").symlink_to("loop1")
    (raw / "top1").symlink_to("top2")  # at the raw root it once stopped the run before any work
    (raw / "top2").symlink_to("top1")
    head = (raw / "b" / "a.jsonl").read_bytes().split(b"never")[0]

    def failing(real, first):  # the disk returns EIO after the first block of a.jsonl
        def chunks(path, *args):
            if path.name != "a.jsonl":
                yield from real(path, *args)
                return
            yield first
            raise OSError(errno.EIO, "Input/output error")

        return chunks

    monkeypatch.setattr(raw_files, "_chunks", failing(raw_files._chunks, (head, None)))
    monkeypatch.setattr(recount, "_decompressed", failing(recount._decompressed, head))
    assert discover_batches(raw) == ["b"]
    assert [n for n, _ in not_batches(raw)] == ["top1", "top2"]
    report = ingest_batch(raw, "b", str(tmp_path / "out"))
    assert (report.raw_records, report.parsed, report.quarantined) == (4, 2, 2)
    assert sorted(report.reasons.items()) == [("missing_field", 1), ("read_error", 1)]
    assert sorted(report.skipped) == [
        ("b/loop1", "cannot be followed (a symbolic link loop)"),
        ("b/loop2", "cannot be followed (a symbolic link loop)"),
    ]
    assert recount_batch(raw, "b") == report.raw_records  # the independent count agrees
    row = TABLES["quarantine"].read(str(tmp_path / "out"), "b").filter(pl.col("reason") == "read_error")
    assert row.select("raw_file", "raw_record", "detail").row(0) == (
        "b/a.jsonl",
        3,
        "the file could not be read past record 2: Input/output error",
    )


def test_no_dataset_is_published_without_a_batch_that_failed_unless_asked(tmp_path):
    """With a batch unreadable, a run once published SFT from the other batch only: half the rows, exit 0."""
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import _run_config, ensure_instance, materialize_all
    from dagster_project.definitions import defs

    raw = tmp_path / "raw"
    for i, name in enumerate(["good", "broken"]):
        (raw / name).mkdir(parents=True)
        run = trajectory([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}], tid=f"t{i}")
        (raw / name / "a.jsonl").write_bytes(orjson.dumps(run) + b"\n")
    (raw / "broken" / ".cowork-format").write_text("no-such-format")  # the batch cannot be read at all
    lines: list[str] = []
    settings = CurateSettings(raw_root=str(raw), data_root=str(tmp_path / "out"), accept_ungraded=True)
    outcome = materialize_all(settings, ensure_instance(tmp_path / "home"), echo=lines.append)
    assert list(outcome.failed) == ["broken", "publication"] and not (tmp_path / "out" / "published").exists()
    assert lines[-1].startswith("not refreshing the corpus: batch(es) broken failed")
    # The UI path: the sensor waits, and a refresh launched by hand or the schedule publishes nothing.
    instance = ensure_instance(tmp_path / "home")
    with dg.build_sensor_context(instance=instance, resources={"settings": settings}) as context:
        skipped = defs.get_sensor_def("corpus_refresh_sensor")(context)
    assert skipped.skip_message.startswith("not refreshing the corpus: batch(es) broken failed")
    launched = defs.resolve_job_def("refresh_corpus").execute_in_process(
        run_config=_run_config(settings), instance=instance, raise_on_error=False
    )
    failures = [e for e in launched.all_events if e.event_type_value == "STEP_FAILURE"]
    assert sorted(e.step_key for e in failures) == ["preference_pairs", "rl_rollouts", "rl_tasks", "sft_dataset"]
    assert "sft_dataset not published: batch(es) broken failed" in str(failures[-1].event_specific_data.error)
    assert not (tmp_path / "out" / "published").exists()
    settings = settings.model_copy(update={"publish_without_failed_batches": True})
    outcome = materialize_all(settings, ensure_instance(tmp_path / "home"), echo=lines.append)
    assert list(outcome.failed) == ["broken"]
    sft = pl.read_parquet(tmp_path / "out" / "published" / "sft_dataset" / "current" / "*.parquet")
    assert sft["sample_id"].to_list() == ["t0"]


def test_a_runs_scratch_files_hold_trajectory_text_under_the_data_root_only(tmp_path, monkeypatch):
    """Killed runs left tokenizer and gate scratch files holding trajectory text in a shared /tmp."""
    import tempfile

    from cowork_assets.datasets import assets
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    made: list[Path] = []
    real = tempfile.NamedTemporaryFile

    def recording(*args, **kwargs):
        file = real(*args, **kwargs)
        made.append(Path(file.name))
        return file

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", recording)
    monkeypatch.setattr(assets, "HELPER_MIN_TEXTS", 0)  # tokenizer helpers, and their shares, however few the texts
    (tmp_path / "raw" / "b").mkdir(parents=True)
    run = trajectory([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}])
    (tmp_path / "raw" / "b" / "a.jsonl").write_bytes(orjson.dumps(run) + b"\n")
    out = tmp_path / "out"
    settings = CurateSettings(raw_root=str(tmp_path / "raw"), data_root=str(out), accept_ungraded=True)
    outcome = materialize_all(settings, ensure_instance(tmp_path / "home"), echo=lambda _: None)
    assert outcome.failed == {}
    assert {p.suffix for p in made} == {".jsonl", ".json", ".arrow"}  # parsed lines, tokenizer shares, gate views
    assert {p.parent for p in made} == {out / ".scratch" / str(os.getpid())}
    assert list((out / ".scratch").iterdir()) == []  # each run removes its own


def test_the_sweep_removes_semaphores_no_process_has_open(tmp_path, monkeypatch):
    """A killed run's pool left its semaphores in /dev/shm (its resource tracker died with it)."""
    import mmap
    from multiprocessing import get_context

    from cowork_assets.runtime import scratch

    shm = tmp_path / "shm"
    shm.mkdir()
    monkeypatch.setattr(scratch, "SHM", shm)
    for name in ("sem.mp-leaked", "sem.mp-open", "psm_other"):
        (shm / name).write_bytes(b"\0" * 32)
    with open(shm / "sem.mp-open", "r+b") as fh, mmap.mmap(fh.fileno(), 32):  # a live pool's, mapped
        assert scratch.sweep(tmp_path / "data-root-not-made-yet") == 0  # no data root: nothing swept at all
        (tmp_path / "root").mkdir()
        assert scratch.sweep(tmp_path / "root") == 1
    assert sorted(p.name for p in shm.iterdir()) == ["psm_other", "sem.mp-open"]
    # A live pool's real semaphore is mapped under the name glibc made it as, not its own: it must stay.
    lock = get_context("spawn").Lock()
    monkeypatch.setattr(scratch, "SHM", Path("/dev/shm"))
    scratch.sweep(tmp_path / "root")
    assert Path("/dev/shm/sem" + lock._semlock.name.replace("/", ".")).exists()


@pytest.fixture
def full_disk(tmp_path):
    """A 256 KB tmpfs (mounting needs root, as in CI; skipped where it is not allowed)."""
    import subprocess

    mount = tmp_path / "full"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def test_a_full_disk_fails_in_one_line_and_the_traceback_is_for_debug(full_disk, default_raw, tmp_path, pipeline):
    """A full disk ended the run correctly but printed ~545 lines of stack traces."""
    import subprocess
    import sys
    from contextlib import suppress

    batch = sorted(p.name for p in default_raw.iterdir() if p.is_dir())[0]  # one batch shows it

    def run(*extra):
        command = [sys.executable, "-m", "cowork_cli", "run", "--raw-root", str(default_raw), "--batch", batch, *extra]
        env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
        return subprocess.run(
            [*command, "--data-root", str(full_disk / "data")], capture_output=True, env=env, text=True
        )

    quiet = run()
    assert quiet.returncode == 1 and quiet.stderr == ""
    failed = [line for line in quiet.stdout.splitlines() if line.startswith("FAILED 2026")]
    assert failed and all("no space left on device" in line for line in failed), quiet.stdout
    assert "Traceback" not in quiet.stdout and "Stack Trace" not in quiet.stdout
    loud = run("--debug", "--force")
    assert loud.returncode == 1 and "Stack Trace" in loud.stderr and "No space left on device" in loud.stderr

    out = str(full_disk / "sft.jsonl")  # a command's own write: one line, exit 1
    with suppress(OSError), open(full_disk / "filler", "wb", buffering=0) as fh:
        while fh.write(b"\0" * 4096):  # whatever the failed run left free
            pass
    argv = ["export", "--format", "openai", "--out", out, "--data-root", pipeline[0].root]
    done = subprocess.run([sys.executable, "-m", "cowork_cli", *argv], capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("cowork-curate export: error: no space left on device: ")
    assert len(done.stderr.splitlines()) == 1 and not os.path.exists(out)
    debug = subprocess.run([sys.executable, "-m", "cowork_cli", *argv, "--debug"], capture_output=True, text=True)
    assert debug.returncode == 1 and "Traceback" in debug.stderr
