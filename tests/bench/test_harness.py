"""`make bench` works end to end on a tiny corpus (its figures are measured, not asserted: speed lives in
the benchmark, not in tests)."""

import os
import subprocess
import sys
import time

import orjson
import pytest

from bench.harness import (
    FLOOR_REPEATS,
    Extras,
    Sample,
    _by_role,
    _role,
    _tree_cpu_seconds,
    _tree_memory_mb,
    bench,
    default_batches,
    floor_seconds,
    phase_cpu_seconds,
    report,
)

EARLIER = {  # runs already in the bench folder: the growth is from the smallest with comparable figures
    30: {"trajectories": 30, "wall_seconds": 2.5, "peak_memory_mb": 400},
    20: {"trajectories": 20, "wall_seconds": 2.0},  # an older version's figures: not comparable
    1000: {"trajectories": 1000, "wall_seconds": 40.0, "peak_memory_mb": 900},  # larger: not a base
}


EXTRAS = Extras(fixed=4, small_batches=2, small_batch=2, incremental=3, floor_runs=2)


@pytest.fixture(scope="module")
def benched(tmp_path_factory):
    """One bench run of 120 trajectories, in a folder holding earlier runs' figures."""
    out = tmp_path_factory.mktemp("bench")
    for size, figures in EARLIER.items():
        (out / f"bench-{size}.json").write_bytes(orjson.dumps(figures))
    return out, bench(120, 2, out, extras=EXTRAS)


def test_bench_separates_the_fixed_cost_small_batches_and_a_daily_drop(benched):
    out, figures = benched
    extra, marginal = figures["extra_runs"], figures["marginal"]
    fixed = extra["fixed"]
    assert (fixed["trajectories"], fixed["batches"], fixed["failed"]) == (4, 2, {})
    assert 0 < fixed["wall_seconds"] and 0 < fixed["cpu_seconds"] and 0 < fixed["fresh_process_wall_seconds"]
    assert abs(marginal["wall_seconds"] - (figures["wall_seconds"] - fixed["wall_seconds"])) <= 0.1
    assert abs(marginal["cpu_seconds"] - (figures["cpu_seconds"] - fixed["cpu_seconds"])) <= 0.1
    assert abs(marginal["wall_per_1000"] - marginal["wall_seconds"] / 120 * 1000) <= 0.01
    naive = figures["naive_reference_seconds"]
    assert abs(marginal["over_naive_reference"] - marginal["wall_seconds"] / naive) <= 0.01
    small = extra["small_batches"]
    assert (small["trajectories"], small["batches"]) == (4, 2)
    assert small["seconds_per_batch"] == round(small["wall_seconds"] - small["one_batch_wall_seconds"], 2)
    batches = sorted(p.name for p in (out / "data-small" / "tables" / "trajectories").iterdir())
    assert len(batches) == 2  # the last of the two small-batch runs: two batches of two
    drop = extra["incremental"]
    assert (drop["trajectories"], drop["failed"]) == (3, {}) and drop["wall_seconds"] > 0
    assert (out / "data-120" / "tables" / "trajectories" / "batch=zz-incremental-3").is_dir()  # it was processed
    assert not (out / "raw-120" / "zz-incremental-3").exists()  # and the corpus is left as it was
    printed = report(figures)
    assert f"fixed cost      {fixed['wall_seconds']} s wall, {fixed['cpu_seconds']} s cpu" in printed
    assert f"as a new `cowork-curate run` process: {fixed['fresh_process_wall_seconds']} s wall" in printed
    assert figures["fork_server_seconds"] >= 0 and f"fork server ({figures['fork_server_seconds']} s)" in printed
    assert f"{small['seconds_per_batch']} s per batch beyond the one-batch run" in printed
    assert f"one batch of 3 dropped onto the corpus: {drop['wall_seconds']} s" in printed
    assert f"x{marginal['over_naive_reference']}" in printed
    alone = extra["dagster_alone"]  # its runs: tests/bench/test_framework_floor.py
    assert alone["batch_runs"] == 2 and set(alone["corpus_runs_seconds"]) == {"refresh_corpus", "refresh_warehouse"}
    corpus = sum(alone["corpus_runs_seconds"].values())
    assert (
        f"Dagster alone   {alone['seconds_per_batch_run']} s per batch run, {alone['seconds_per_batch_in_one_run']} s "
        f"per batch in one run over them, {corpus:.2f} s for the corpus jobs" in printed
    )


def test_bench_writes_its_figures_and_the_growth_between_sizes(benched):
    tmp_path, figures = benched
    assert figures["failed"] == {}
    floor = figures["floor"]
    assert floor["sft_messages"] > 0 and floor["seconds"] >= floor["read_seconds"] >= 0
    assert len(floor["tokenize_runs"]) == FLOOR_REPEATS and floor["tokenize_seconds"] == min(floor["tokenize_runs"])
    assert figures["wall_over_floor"] > 1 and figures["wall_over_strict_floor"] > 1
    assert {"staging_tables", "evidence", "curation", "sft_candidate"} <= set(figures["per_asset_seconds"])
    assert figures["peak_memory_mb"] > 0
    processes = figures["peak_processes"]  # what the peak was made of, and it adds up to it
    assert [p["process"] for p in processes].count("main process") == 1
    assert processes == sorted(processes, key=lambda p: -p["mb"])
    assert abs(sum(p["mb"] for p in processes) - figures["peak_memory_mb"]) <= len(processes)
    phases = figures["phase_seconds"]
    assert phases["batches"] > 0 and phases["cross_batch"] > 0 and phases["startup"] >= 0
    assert abs(sum(phases.values()) - figures["wall_seconds"]) < 0.5  # the phases account for the wall time
    peaks = figures["phase_peaks"]  # each phase's own peak, within the run's, and what made it up
    assert set(peaks) == {"batches", "cross_batch"}
    for peak in peaks.values():
        assert 0 < peak["mb"] <= figures["peak_memory_mb"]
        assert abs(sum(p["mb"] for p in peak["processes"]) - peak["mb"]) <= 2 * len(peak["processes"])
    assert "main process" in [p["process"] for p in peaks["cross_batch"]["processes"]]
    # the batch workers, forked from their server, hold their own memory: counted whole, not as forks that share it
    workers = sum(p["mb"] for p in peaks["batches"]["processes"] if p["process"] == "batch worker")  # by role
    assert workers > 2 * 100, peaks["batches"]
    assert "batch workers' fork server" in [p["process"] for p in peaks["batches"]["processes"]]
    step_peaks = figures["cross_batch_step_peaks"]  # each cross-batch step's, within its phase's peak
    seconds = figures["per_asset_seconds"]  # memory is sampled every 0.2 s: a step that lasts 0.5 s holds a sample
    lasting = {s for s in ("dedup_clusters", "exclusions", "sft_candidate") if seconds[s] >= 0.5}
    assert step_peaks and lasting <= set(step_peaks) <= set(seconds)
    assert list(step_peaks.values()) == sorted(step_peaks.values(), reverse=True)
    assert 0 < max(step_peaks.values()) <= peaks["cross_batch"]["mb"]
    assert all(f"    {step:<40} {mb:>8} MB" in report(figures) for step, mb in step_peaks.items())
    cpu = figures["phase_cpu_seconds"]  # every phase's CPU, of every process
    assert set(cpu) == set(phases) and cpu["batches"] > 0 and cpu["cross_batch"] > 0
    steps = figures["per_asset_cpu_seconds"]  # each step's, from the process that ran it
    assert set(steps) <= set(figures["per_asset_seconds"]) and steps["staging_tables"] > 0
    assert sum(steps.values()) <= sum(cpu.values()) + 0.5
    growth, wall, peak = figures["growth"], figures["wall_seconds"], figures["peak_memory_mb"]
    assert growth["from_trajectories"] == 30 and "growth from 30 trajectories" in report(figures)
    assert (wall - 0.05) / 2.5 - 0.005 <= growth["wall"] <= (wall + 0.05) / 2.5 + 0.005
    assert (peak - 0.5) / 400 - 0.005 <= growth["peak_memory"] <= (peak + 0.5) / 400 + 0.005
    assert orjson.loads((tmp_path / "bench-120.json").read_bytes()) == figures
    assert "strict floor" in report(figures)
    assert "s cross-batch" in report(figures) and "MB main process" in report(figures)
    assert f"cpu             {figures['phase_cpu_seconds']['startup']} s starting" in report(figures)
    assert f"phase peaks     batches {figures['phase_peaks']['batches']['mb']} MB (" in report(figures)
    assert figures["naive_reference_seconds"] > 0 and "wall / naive reference" in report(figures)
    # the ratio of the unrounded wall to the reference (rounded to 0.1 s, as printed), itself rounded to 0.01
    wall, naive = figures["wall_seconds"], figures["naive_reference_seconds"]
    assert (wall - 0.05) / naive - 0.005 <= figures["wall_over_naive_reference"] <= (wall + 0.05) / naive + 0.005
    assert len(figures["content_digests"]) == 23 and (tmp_path / "naive-120.parquet").is_file()


def test_a_larger_corpus_is_more_batches_of_at_most_20_000_runs():
    assert [default_batches(n) for n in (60, 20_000, 80_000, 80_001, 400_000)] == [4, 4, 4, 5, 20]


def test_the_naive_reference_does_its_part_of_the_job(tmp_path):
    """Passing teacher runs only, observations cut to 1,000 characters, samples over 40,000 dropped, exact
    duplicates dropped, tokens counted per message."""
    import json
    import subprocess
    import sys

    import polars as pl

    from bench.harness import NAIVE_REFERENCE

    def run(tid, role="teacher", passed=True, observation="ok", user="Find it."):
        return json.dumps(
            {
                "trajectory_id": tid,
                "teacher": {"role": role},
                "grade": {"passed": passed},
                "messages": [{"role": "user", "content": user}, {"role": "tool", "content": observation}],
            }
        )

    batch = tmp_path / "raw" / "b"
    batch.mkdir(parents=True)
    lines = [
        run("kept", observation="x" * 5000),
        run("copy", observation="x" * 5000),
        run("student", role="student"),
        run("failed", passed=False),
        run("long", user="y" * 50_000),
        "not json",
        json.dumps({"trajectory_id": 7, "teacher": [], "messages": []}),  # wrong types: skipped
    ]
    (batch / "a.jsonl").write_text("\n".join(lines) + "\n")
    subprocess.run(
        [sys.executable, str(NAIVE_REFERENCE), str(tmp_path / "raw"), str(tmp_path / "out.parquet")],
        check=True,
        capture_output=True,
    )
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert out["trajectory_id"].to_list() == ["kept"]
    assert json.loads(out["messages"][0])[1]["content"] == "x" * 1000 and out["tokens"][0] > 0


def test_the_floor_is_measured_in_a_fresh_interpreter(benched, monkeypatch):
    tmp_path = benched[0]
    monkeypatch.setattr("bench.harness._measure_floor", lambda *a: pytest.fail("measured in the bench's process"))
    floor = floor_seconds(tmp_path / "raw-120", tmp_path / "data-120", "o200k_base", 2)
    assert floor["sft_messages"] > 0 and len(floor["tokenize_runs"]) == FLOOR_REPEATS
    with pytest.raises(
        RuntimeError,
        match=r"measuring the floor failed \(exit 1\): FileNotFoundError: sft_dataset has not been .*nowhere",
    ):
        floor_seconds(tmp_path / "raw-120", tmp_path / "nowhere", "o200k_base", 2)


def test_the_peak_is_reported_by_role_largest_first():
    processes = [
        {"process": "main process", "mb": 450},
        {"process": "batch worker", "mb": 900},
        {"process": "batch worker", "mb": 880},
        {"process": "log capture", "mb": 9},
    ]
    assert _by_role(processes) == "1780 MB 2 x batch worker, 450 MB main process, 9 MB log capture"


def test_processes_of_the_peak_are_named_by_role():
    sleeping = [sys.executable, "-c", "import time; time.sleep(30)", "-m"]
    helper = subprocess.Popen([*sleeping, "cowork_assets.tokens"])
    suites = subprocess.Popen([*sleeping, "cowork_assets.datasets.suites"])
    other = subprocess.Popen(["sleep", "30"])
    for child in (helper, suites, other):  # until their exec has filled in their command line
        while not open(f"/proc/{child.pid}/cmdline", "rb").read():
            time.sleep(0.01)
    try:
        assert _role(os.getpid()) == "main process"
        assert _role(helper.pid) == "tokenizer helper"
        assert _role(suites.pid) == "Great Expectations helper"
        assert _role(other.pid) == "sleep 30"
    finally:
        for child in (helper, suites, other):
            child.kill()
            child.wait()
    assert _role(other.pid) == "exited process"


def test_a_forked_child_does_not_count_its_parents_memory_twice():
    ballast = bytearray(300 * 2**20)  # 300 MB written, so resident
    ballast[::4096] = b"x" * len(ballast[::4096])
    before = _tree_memory_mb(os.getpid())
    child = os.fork()  # until it execs, the child's pages are this process's
    if child == 0:
        time.sleep(5)
        os._exit(0)
    other = subprocess.Popen(["sleep", "5"])  # forked and exec'd: a process of its own
    while not open(f"/proc/{other.pid}/cmdline", "rb").read().startswith(b"sleep"):
        time.sleep(0.01)
    try:
        tree = _tree_memory_mb(os.getpid())
        assert tree[os.getpid()] > 300 and tree[child] == 0 and 0 < tree[other.pid] < 50
        assert sum(tree.values()) < sum(before.values()) + 50
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)
        other.kill()
        other.wait()


def test_cpu_is_summed_into_the_phase_each_sample_falls_in():
    samples = [
        Sample(at, 0.0, {}, cpu)
        for at, cpu in [(1.0, {7: 0.5}), (3.0, {7: 1.0, 8: 2.0}), (6.0, {9: 0.5}), (9.0, {7: 4.0})]
    ]
    spans = {"batches": [(2.0, 4.0), (2.5, 5.0)], "cross_batch": [(5.5, 7.0)]}
    assert phase_cpu_seconds(samples, spans, since=0.0) == {
        "startup": 0.5,
        "batches": 3.0,
        "cross_batch": 0.5,
        "other": 4.0,
    }


def test_a_busy_child_process_is_seen_using_cpu():
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\n"
            "print('busy', flush=True)\ntime.sleep(5)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        # Wait for the child to say it has burnt its CPU: on a loaded machine 0.6 s of CPU takes longer than 0.6 s.
        # It burns 0.6 s for a bound of 0.5: /proc counts CPU in clock ticks, which can lag the child's own clock.
        assert child.stdout.readline() == "busy\n"
        tree = _tree_cpu_seconds(os.getpid())
        ((parent, seconds),) = [v for (pid, _), v in tree.items() if pid == child.pid]
        assert parent == os.getpid() and seconds >= 0.5
    finally:
        child.kill()
        child.wait()
