"""`python -m bench.object_store` counts the requests a run makes to a bucket, from every process of the run."""

import os
import re
import subprocess
import sys

import pytest

from bench.object_store import _kind
from tests.conftest import ROOT


def test_a_request_is_counted_by_its_method_and_key_without_its_batch_or_run():
    assert _kind("GET", "/bench", "list-type=2&delimiter=%2F&prefix=curated") == "GET (list the bucket, one level)"
    assert _kind("GET", "/bench/", "list-type=2&prefix=curated") == "GET (list the bucket)"
    key = (
        "/bench/curated/in-progress/2026-11-29-teacher-a/3f2a9c1e-77b0-4d0e-9a55-2b1f0c9d8e7a/trajectories/data.parquet"
    )
    assert _kind("HEAD", key, "") == "HEAD curated/in-progress/<batch>/<id>/trajectories/data.parquet"
    assert (
        _kind("PUT", "/bench/curated/state/manifests/batch-0003.json", "") == "PUT curated/state/manifests/<batch>.json"
    )


@pytest.mark.e2e  # a CLI run, in the bench's process
def test_the_bench_runs_the_cli_on_a_bucket_and_prints_every_request_it_received(tmp_path):
    pytest.importorskip("moto.server")
    done = subprocess.run(
        [sys.executable, "-m", "bench.object_store", "--trajectories", "6", "--batches", "2"],
        cwd=ROOT,
        env=os.environ | {"TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "6 trajectories in 2 batches: exit status 0" in done.stdout
    total, methods = re.search(r"requests: ([\d,]+) \((.*)\)", done.stdout).groups()
    by_method = {m: int(n.replace(",", "")) for m, n in (part.split() for part in methods.split(", "))}
    assert sum(by_method.values()) == int(total.replace(",", "")) and {"GET", "HEAD", "PUT"} <= set(by_method)
    assert re.search(r"^\s+[\d,]+  GET curated/state/manifests/<batch>\.json$", done.stdout, re.M), done.stdout
    assert list(tmp_path.iterdir()) == []  # its raw files, instance and work folder are gone with it
