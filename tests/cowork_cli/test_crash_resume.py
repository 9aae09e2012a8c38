"""Kill a multi-batch run mid-way (the process, not an exception), resume it, and get the same result."""

import os
import signal
import subprocess
import sys
import time

import polars as pl
import pyarrow.parquet as pq

from cowork_assets.runtime import scratch
from cowork_assets.store.registry import TABLES as REGISTRY

TABLES = [
    "trajectories",
    "messages",
    "tool_calls",
    "quarantine",
    "evidence",
    "curated_messages",
    "sample_stats",
    "evidence_audit",
    "structure_findings",
    "dedup_signatures",
]


def _run(raw, data, home, *extra):
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "cowork_cli.cli", "run", "--raw-root", str(raw), "--data-root", str(data), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )


def _tables(data):
    out = {}
    for t in TABLES:
        files = sorted((data / "tables" / t).glob("batch=*/data.parquet"))
        out[t] = pl.concat([pl.read_parquet(f) for f in files]).sort(pl.all())
    for t in ("task_findings", "dedup_clusters", "exclusions"):  # one file, or a file per task bucket
        out[t] = REGISTRY[t].read(str(data)).sort(pl.all())
    for d in ("sft_dataset", "rl_tasks", "rl_rollouts"):
        out[d] = pl.concat([pl.read_parquet(f) for f in sorted((data / "published" / d / "current").glob("*.parquet"))])
    return out


def test_killed_run_resumes_without_redoing_finished_batches(default_raw, pipeline, tmp_path):
    """On the default data (3 batches), compared with the shared uninterrupted run of it."""
    raw = default_raw
    proc = _run(raw, tmp_path / "data", tmp_path / "home")
    finished = []
    deadline = time.monotonic() + 240
    for line in proc.stdout:  # kill as soon as the first batch is written, while the run goes on with the second
        if line.startswith("batch ") and ": written" in line:
            finished.append(line.split("batch ")[1].split(":")[0])
            os.killpg(proc.pid, signal.SIGKILL)
            break
        assert time.monotonic() < deadline
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL and len(finished) == 1

    # Nothing visible is half-written: every output file present is a complete Parquet file.
    for f in (tmp_path / "data" / "tables").rglob("data.parquet"):
        pq.read_metadata(f)

    resumed = _run(raw, tmp_path / "data", tmp_path / "home")
    out, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, out
    # the batch reported done, and any other the killed run recorded done before the signal landed (the
    # second worker may finish in between), is not redone; every other batch is processed once
    up_to_date = [line for line in out.splitlines() if ": up to date" in line]
    redone = [line for line in out.splitlines() if ": ok (" in line]
    assert f"batch {finished[0]}: up to date" in out
    assert len(up_to_date) + len(redone) == 3 and len(redone) >= 1, out
    assert not list((tmp_path / "data").rglob(".*.tmp"))  # the killed run's temporaries were swept
    assert list((tmp_path / "data" / ".scratch").iterdir()) == []  # and its processes' scratch folders

    settings, _, outcome = pipeline
    assert outcome.failed == {}
    resumed_tables, clean_tables = _tables(tmp_path / "data"), _tables(settings.local_root)
    for name, frame in clean_tables.items():
        assert resumed_tables[name].equals(frame), name


def test_sweep_removes_temporaries_of_dead_and_zombie_writers_only(tmp_path, monkeypatch):
    monkeypatch.setattr(scratch, "SHM", tmp_path / "shm")  # no semaphores: this test counts files
    # A killed worker stays a zombie until init reaps it; a run resumed at once must still sweep its files.
    zombie = subprocess.Popen(["sleep", "60"])
    zombie.kill()
    while open(f"/proc/{zombie.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.01)
    finished = subprocess.Popen(["true"])
    finished.wait()  # reaped: the pid no longer exists
    live = tmp_path / "t" / f".data.parquet.{os.getpid()}.aaaa.tmp"
    stale = [tmp_path / "t" / f".data.parquet.{pid}.bbbb.tmp" for pid in (zombie.pid, finished.pid)]
    for f in [live, *stale]:
        f.parent.mkdir(exist_ok=True)
        f.write_bytes(b"partial")
    for pid in (os.getpid(), zombie.pid, finished.pid):  # each process's scratch folder
        (tmp_path / ".scratch" / str(pid)).mkdir(parents=True)
        (tmp_path / ".scratch" / str(pid) / "tmpshare.json").write_text('["trajectory text"]')
    assert scratch.sweep(tmp_path) == 4
    assert sorted(tmp_path.rglob(".*.tmp")) == [live]
    assert [p.name for p in (tmp_path / ".scratch").iterdir()] == [str(os.getpid())]
    zombie.wait()
