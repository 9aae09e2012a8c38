"""`make bench` (`python -m bench.harness`): run the whole pipeline on a synthetic corpus and measure it.

Prints and writes (bench.json) the wall time per asset and in total, trajectories/s, MB/s of raw
input, the peak memory of the whole run (resident memory of this process and every child, sampled
from /proc), and the floor measured on the same machine: reading the raw files plus
tiktoken-encoding the text of the published SFT samples with the same number of threads. Beside the main
run (`Extras`): the fixed cost (the same pipeline on a few trajectories in the same batch layout) and the
marginal wall and CPU beyond it, the cost per small batch, and one new batch dropped onto the corpus.
"""

from __future__ import annotations

import bisect
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

import orjson
import polars as pl

from cowork_assets.orchestration.run_health import recorded_process
from cowork_assets.runtime.procfs import read, stat_fields
from cowork_assets.store.registry import TABLES
from cowork_cli.digest import content_digests

ROLES = {
    "cowork_assets.tokens": "tokenizer helper",
    "cowork_assets.datasets.suites": "Great Expectations helper",
    "resource_tracker": "resource tracker",
    "tail -F": "log capture",
    "watch_orphans": "log capture",
}


FORK_SERVER = b"multiprocessing.forkserver"  # in the command line of the batch workers' server and of its workers


def _role(pid: int) -> str:
    """What a process of the run is, by its command line (empty once it has exited)."""
    if pid == os.getpid():
        return "main process"
    raw = read(f"/proc/{pid}/cmdline")
    if FORK_SERVER in raw:
        return "batch worker" if _forked_worker(pid, raw) else "batch workers' fork server"
    command = raw.replace(b"\0", b" ").decode(errors="replace").strip()
    return next((role for marker, role in ROLES.items() if marker in command), command[:80] or "exited process")


def _forked_worker(pid: int, command: bytes) -> bool:
    """Whether the process is a batch worker: forked by the fork server, whose command line it keeps."""
    fields = stat_fields(pid)
    return bool(fields) and read(f"/proc/{int(fields[1])}/cmdline") == command


def _tree_stat_fields(root_pid: int) -> dict[int, list[bytes]]:
    """/proc/<pid>/stat fields of a process and each of its descendants, parents before children."""
    stats = {int(e): fields for e in os.listdir("/proc") if e.isdigit() and (fields := stat_fields(int(e)))}
    children: dict[int, list[int]] = defaultdict(list)
    for pid, fields in stats.items():
        children[int(fields[1])].append(pid)
    tree, stack = {}, [root_pid]
    while stack:
        pid = stack.pop()
        tree[pid] = stats.get(pid, [])
        stack += children.get(pid, [])
    return tree


TICK = os.sysconf("SC_CLK_TCK")


def _tree_cpu_seconds(root_pid: int) -> dict[tuple[int, bytes], tuple[int, float]]:
    """CPU seconds (user + system) each process of the tree has used so far, keyed by (pid, start time) so
    that a reused pid is another process: (parent pid, seconds)."""
    return {
        (pid, fields[19]): (int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK)
        for pid, fields in _tree_stat_fields(root_pid).items()
        if len(fields) > 19
    }


def _tree_memory_mb(root_pid: int) -> dict[int, float]:
    """Resident memory (MB) of a process and each of its descendants, from /proc.

    A child forked and not yet exec'd (its command line still its parent's) shares all its parent's
    pages: it is counted as 0, not as a second copy of its parent. The batch workers are the exception:
    forked from their server, they keep its command line and hold a batch's memory of their own, so they
    count whole (the code they share with the server counted in each, as it was when each imported it).
    Proportional memory (PSS) would settle that, but reading it costs enough CPU per sample to take a
    noticeable share of a core from the run being measured."""
    page_mb = os.sysconf("SC_PAGE_SIZE") / 2**20
    tree, commands = {}, {}
    for pid, fields in _tree_stat_fields(root_pid).items():  # parents first: their command lines are read
        commands[pid] = read(f"/proc/{pid}/cmdline")  # before the memory: an exec in between then reads small
        statm = read(f"/proc/{pid}/statm").split()
        forked = pid != root_pid and len(fields) > 1 and commands[pid] == commands.get(int(fields[1]))
        forked = forked and FORK_SERVER not in commands[pid]
        tree[pid] = 0.0 if forked or len(statm) < 2 else int(statm[1]) * page_mb
    return tree


class Sample(NamedTuple):
    at: float  # epoch seconds
    mb: float
    roles: dict[str, float]  # MB by role
    cpu: dict[int, float]  # CPU seconds per process since the previous sample


class PeakMemory:
    """Samples the memory of this process tree: `peak` (MB, resident memory summed over the processes),
    when it happened (`peak_at`, seconds) and what it was made of (`peak_processes`: each process's role
    and MB, largest first); `samples` keeps every sample (`Sample`) for the peak and the CPU of each phase
    and step. A sample's CPU is what each process used since the previous sample (a process that ends
    between two samples loses its last fraction of a sampling interval); `parents` maps every process seen
    to its parent, to tell whose helper a process was."""

    def __init__(self, interval: float = 0.2):
        self.peak, self.peak_at, self._stop, self.interval = 0.0, 0.0, threading.Event(), interval
        self.peak_processes: list[dict] = []
        self.samples: list[Sample] = []
        self.parents: dict[int, int] = {}

    def __enter__(self):
        started = time.monotonic()
        used = {key: seconds for key, (_, seconds) in _tree_cpu_seconds(os.getpid()).items()}  # before the run

        def sample():
            while not self._stop.is_set():
                cpu: dict[int, float] = defaultdict(float)
                for key, (parent, seconds) in _tree_cpu_seconds(os.getpid()).items():
                    cpu[key[0]] += seconds - used.get(key, 0.0)
                    used[key], self.parents[key[0]] = seconds, parent
                tree = _tree_memory_mb(os.getpid())
                processes = [
                    {"process": _role(pid), "mb": round(mb)}
                    for pid, mb in sorted(tree.items(), key=lambda kv: -kv[1])
                    if mb >= 1
                ]
                roles: dict[str, float] = defaultdict(float)
                for p in processes:
                    roles[p["process"]] += p["mb"]
                now = sum(tree.values())
                self.samples.append(Sample(time.time(), now, dict(roles), {pid: c for pid, c in cpu.items() if c > 0}))
                if now > self.peak:
                    self.peak, self.peak_at, self.peak_processes = now, time.monotonic() - started, processes
                self._stop.wait(self.interval)

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def published_sft_texts(data_root: Path) -> list[str]:
    """The text of every published SFT message as it is tokenized: reasoning, content, then each tool call's
    name and arguments (what `sft_dataset.tokens` counts)."""
    from cowork_assets.store.storage import plain
    from cowork_assets.tokens import token_text

    function = pl.element().struct.field("function")
    calls = pl.col("tool_calls").list.eval(
        pl.struct(name=function.struct.field("name"), arguments=function.struct.field("arguments"))
    )
    sft = plain(TABLES["sft_dataset"].scan(str(data_root)).select("messages").collect())
    messages = sft.select(pl.col("messages").explode()).unnest("messages")
    return messages.select(token_text(pl.col("content"), calls, pl.col("reasoning_content"))).to_series().to_list()


FLOOR_REPEATS = 3


def floor_seconds(raw_root: Path, data_root: Path, encoding: str, workers: int) -> dict:
    """The work no pipeline can avoid: read the raw files, tokenize the published SFT text.

    Tokenized two ways: with tiktoken's batch API (`encode_ordinary_batch` with as many threads as the
    pipeline has tokenizer processes, as issue 7 defines the floor) and with the pipeline's own
    `TokenCounter` (each distinct text once, in a plain loop per process, its helpers started before),
    which is several times faster on many short texts; the stricter floor is the honest one to compare
    against.

    Measured in a fresh interpreter, each way of tokenizing the best of FLOOR_REPEATS (a floor is the
    least the work costs): the batch API's two threads take turns on the GIL, so one measurement varies, and
    more so in a process that has just run the pipeline.
    """
    command = [sys.executable, "-m", "bench.harness", FLOOR, str(raw_root), str(data_root), encoding, str(workers)]
    done = subprocess.run(command, capture_output=True, cwd=ROOT)
    if done.returncode:
        why = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]  # the exception
        raise RuntimeError(f"measuring the floor failed (exit {done.returncode}): {why[:500]}")
    return orjson.loads(done.stdout)


def _measure_floor(raw_root: Path, data_root: Path, encoding: str, workers: int) -> dict:
    from cowork_assets.ingest.formats import scan_batch
    from cowork_assets.store.raw_files import discover_batches
    from cowork_assets.tokens import TokenCounter, get_encoding

    started = time.monotonic()
    for batch in discover_batches(raw_root):
        sources = scan_batch(raw_root, batch)
        for path in sources.files:
            for _ in sources.records(path):
                pass
    read = time.monotonic() - started
    texts = published_sft_texts(data_root)
    enc = get_encoding(encoding)

    def timed_runs(tokenize) -> list[float]:
        runs = []
        for _ in range(FLOOR_REPEATS):
            started = time.monotonic()
            tokenize()
            runs.append(round(time.monotonic() - started, 2))
        return runs

    batch_api = timed_runs(lambda: enc.encode_ordinary_batch(texts, num_threads=workers))
    with TokenCounter(encoding, workers) as counter:
        loop = timed_runs(lambda: counter.count(texts))
    return {
        "read_seconds": round(read, 2),
        "tokenize_seconds": min(batch_api),
        "tokenize_runs": batch_api,
        "seconds": round(read + min(batch_api), 2),
        "tokenize_loop_seconds": min(loop),
        "strict_seconds": round(read + min(loop), 2),
        "sft_messages": len(texts),
    }


def _runs_since(instance, since: float) -> list:
    return [r for r in instance.get_run_records() if r.create_timestamp.timestamp() >= since]


def step_spans(instance, run_id: str) -> list[tuple[str, float, float]]:
    """(name, start, end) of each step of a run, the batch step's stages (of each of its batches, one after another)
    as steps of their own: a stage ends at its last materialization or check result, and the next starts there
    (orchestration/stages.py)."""
    import dagster as dg

    from dagster_project.jobs import BATCH_STAGES, batch_stages

    stage_of = {key: stage.name for stage in BATCH_STAGES for key in stage.keys}
    spans = []
    for step in instance.get_run_step_stats(run_id):
        if not (step.start_time and step.end_time):
            continue
        if step.step_key != batch_stages.op.name:
            spans.append((step.step_key, step.start_time, step.end_time))
            continue
        kinds = {dg.DagsterEventType.ASSET_MATERIALIZATION, dg.DagsterEventType.ASSET_CHECK_EVALUATION}
        reported = []  # (batch, stage, when), in the order the step reported them
        for record in instance.get_records_for_run(run_id, of_type=kinds).records:
            event = record.event_log_entry.dagster_event
            data = event.step_materialization_data.materialization if event.is_step_materialization else None
            data = data or event.event_specific_data
            reported.append(((data.partition, stage_of[data.asset_key]), record.event_log_entry.timestamp))
        start = step.start_time
        for i, (stage, when) in enumerate(reported):
            if i + 1 == len(reported) or reported[i + 1][0] != stage:  # the stage's last report
                spans.append((stage[1], start, when))
                start = when
    return spans


def per_asset_seconds(instance, since: float) -> dict[str, float]:
    seconds: dict[str, float] = defaultdict(float)
    for record in _runs_since(instance, since):
        for name, start, end in step_spans(instance, record.dagster_run.run_id):
            seconds[name] += end - start
    return dict(sorted(seconds.items(), key=lambda kv: -kv[1]))


def phase_spans(instance, since: float) -> dict[str, list[tuple[float, float]]]:
    """(start, end) in epoch seconds of each run since `since`: batch runs, and cross-batch runs."""
    from dagster_project.jobs import BATCH_JOB

    spans: dict[str, list[tuple[float, float]]] = {"batches": [], "cross_batch": []}
    for record in _runs_since(instance, since):
        stats = instance.get_run_stats(record.dagster_run.run_id)
        if stats.start_time and stats.end_time:
            phase = "batches" if record.dagster_run.job_name == BATCH_JOB else "cross_batch"
            spans[phase].append((stats.start_time, stats.end_time))
    return spans


def phase_peaks(samples: list[Sample], spans: dict) -> dict[str, dict]:
    """The largest memory sample of the batch phase (first batch start to last batch end) and of the
    cross-batch runs: MB, and MB by role, largest first."""
    windows = {"batches": [(min(s for s, _ in spans["batches"]), max(e for _, e in spans["batches"]))]}
    windows["cross_batch"] = spans["cross_batch"]
    peaks = {}
    for phase, within in windows.items():
        inside = [x for x in samples if any(start <= x.at <= end for start, end in within)]
        if inside:
            _, mb, roles, _ = max(inside, key=lambda x: x.mb)
            peaks[phase] = {
                "mb": round(mb),
                "processes": [
                    {"process": role, "mb": round(r)} for role, r in sorted(roles.items(), key=lambda kv: -kv[1])
                ],
            }
    return peaks


def cross_batch_step_peaks(instance, since: float, samples: list[Sample]) -> dict[str, int]:
    """The largest memory sample (MB, all processes) while each step of the cross-batch runs ran, largest first: the
    selection's steps (dedup_clusters, exclusions) hold one task bucket at a time."""
    from dagster_project.jobs import BATCH_JOB

    times, peaks = [s.at for s in samples], {}
    for record in _runs_since(instance, since):
        if record.dagster_run.job_name == BATCH_JOB:  # a run of one batch or several
            continue
        for step in instance.get_run_step_stats(record.dagster_run.run_id):
            if step.start_time and step.end_time:
                lo, hi = bisect.bisect_left(times, step.start_time), bisect.bisect_right(times, step.end_time)
                if inside := samples[lo:hi]:
                    peaks[step.step_key] = max(peaks.get(step.step_key, 0), round(max(x.mb for x in inside)))
    return dict(sorted(peaks.items(), key=lambda kv: -kv[1]))


def phase_seconds(spans: dict, since: float, wall: float) -> dict[str, float]:
    """Where the wall time went: before the first batch run, the batch phase (runs in parallel), the
    cross-batch phase (one run after another), and the rest (between and after runs)."""
    if not spans["batches"]:
        return {}
    first = min(start for start, _ in spans["batches"])
    batches = max(end for _, end in spans["batches"]) - first
    cross = sum(end - start for start, end in spans["cross_batch"])
    return {
        "startup": round(first - since, 1),
        "batches": round(batches, 1),
        "cross_batch": round(cross, 1),
        "other": round(wall - (first - since) - batches - cross, 1),
    }


def phase_cpu_seconds(samples: list[Sample], spans: dict, since: float) -> dict[str, float]:
    """CPU seconds of every process of the run in each phase of `phase_seconds` (so cpu / wall of a phase
    is how many cores it kept busy on average)."""
    if not spans["batches"]:
        return {}
    first, last = min(s for s, _ in spans["batches"]), max(e for _, e in spans["batches"])
    windows = {"startup": [(since, first)], "batches": [(first, last)], "cross_batch": spans["cross_batch"]}
    cpu = {phase: 0.0 for phase in windows}
    total = 0.0
    for sample in samples:
        used = sum(sample.cpu.values())
        total += used
        phase = next((p for p, within in windows.items() if any(a < sample.at <= b for a, b in within)), None)
        if phase:
            cpu[phase] += used
    return {**{p: round(c, 1) for p, c in cpu.items()}, "other": round(total - sum(cpu.values()), 1)}


def per_asset_cpu_seconds(instance, since: float, memory: PeakMemory) -> dict[str, float]:
    """CPU seconds of each step, summed over runs: what the run's process (and the helpers it started) used
    while the step ran. Steps of one process run one after another, so the process's CPU is the step's."""
    runs = {}
    for record in _runs_since(instance, since):
        if identity := recorded_process(record.dagster_run):
            runs[record.dagster_run.run_id] = int(identity.rsplit(":", 2)[1])

    def owner(pid: int) -> int | None:  # the nearest process, itself or an ancestor, that executes runs
        while pid not in run_pids and pid in memory.parents:
            pid = memory.parents[pid]
        return pid if pid in run_pids else None

    run_pids = set(runs.values())
    owners = {pid: owner(pid) for sample in memory.samples for pid in sample.cpu}
    times = [s.at for s in memory.samples]
    seconds: dict[str, float] = defaultdict(float)
    for run_id, pid in runs.items():
        for name, start, end in step_spans(instance, run_id):
            lo, hi = bisect.bisect_right(times, start), bisect.bisect_right(times, end)
            for sample in memory.samples[lo:hi]:
                seconds[name] += sum(c for p, c in sample.cpu.items() if owners[p] == pid)
    return {k: round(v, 1) for k, v in seconds.items()}


ROOT = Path(__file__).resolve().parents[1]
FLOOR = "--measure-floor"  # the argument that makes the harness's process the floor's
NAIVE_REFERENCE = Path(__file__).resolve().parent / "naive_reference.py"


def naive_reference_seconds(raw_root: Path, out: Path) -> float | None:
    """Wall time of bench/naive_reference.py (a plain script doing part of the job) on the same corpus,
    interpreter start included; None where the script is not at hand (an installed wheel)."""
    if not NAIVE_REFERENCE.is_file():
        return None
    started = time.monotonic()
    subprocess.run([sys.executable, str(NAIVE_REFERENCE), str(raw_root), str(out)], check=True, capture_output=True)
    return round(time.monotonic() - started, 1)


BATCH_TRAJECTORIES = 20_000


class Extras(NamedTuple):
    """The runs beside the main one that separate the fixed cost from the per-record cost (issue: performance,
    re-based): the same pipeline on `fixed` trajectories in the main run's batch layout; `small_batches` batches
    of `small_batch` trajectories against the same trajectories in one batch; and one new batch of `incremental`
    trajectories dropped onto the corpus the main run built; and Dagster's own cost of these runs, `floor_runs`
    batch runs and the corpus jobs of a copy of the jobs whose steps do no work (`framework_floor.py`)."""

    fixed: int = 40
    small_batches: int = 50
    small_batch: int = 20
    incremental: int = 1_000
    floor_runs: int = 10


def timed_pipeline(raw: Path, data: Path, home: Path) -> dict:
    """Wall and CPU seconds (every process of the run) of one `cowork-curate run` of `raw` into fresh `data` and
    `home` folders, batches in workers as in the main run."""
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    for folder in (data, home):
        if folder.exists():
            shutil.rmtree(folder)
    settings = CurateSettings(raw_root=str(raw), data_root=str(data), settle_seconds=0, parallel_from_mb=0)
    instance = ensure_instance(home)
    with PeakMemory() as memory:
        started = time.monotonic()
        outcome = materialize_all(settings, instance, echo=lambda line: None)
        wall = time.monotonic() - started
    cpu = sum(sum(sample.cpu.values()) for sample in memory.samples)
    return {"wall_seconds": round(wall, 1), "cpu_seconds": round(cpu, 1), "failed": outcome.failed}


def start_fork_server(home: Path, workers: int) -> float:
    """Seconds to start the batch workers' fork server (its imports of the code) and fork a first worker from it."""
    from cowork_cli.workers import worker_pool

    started = time.monotonic()
    with worker_pool(workers, str(home)) as pool:
        pool.submit(int).result()
    return round(time.monotonic() - started, 1)


def fresh_process_run(raw: Path, data: Path, home: Path) -> float:
    """Wall seconds of `cowork-curate run` in a new interpreter, as a user starts it (its imports, the workers' fork
    server and the summary it prints included), into fresh `data` and `home` folders, batches in workers."""
    for folder in (data, home):
        if folder.exists():
            shutil.rmtree(folder)
    args = ["--raw-root", str(raw), "--data-root", str(data), "--dagster-home", str(home)]
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "cowork_cli", "run", *args, "--set", "parallel_from_mb=0", "--set", "settle_seconds=0"],
        check=True,
        capture_output=True,
    )
    return round(time.monotonic() - started, 1)


def extra_runs(out: Path, size: int, batches: int, raw: Path, settings, instance, extras: Extras, seed: int) -> dict:
    """The fixed cost, the cost per small batch, the incremental refresh and Dagster's own part (`Extras`), each
    timed."""
    from bench.framework_floor import framework_floor
    from cowork_cli.runner import materialize_all

    def corpus(name: str, trajectories: int, in_batches: int) -> Path:
        folder = out / f"raw-{name}"
        if not (folder / "manifest.json").exists():
            generate_corpus(folder, trajectories, in_batches, seed)
        return folder

    fixed_corpus = corpus(f"fixed-{extras.fixed}x{batches}", extras.fixed, batches)
    fixed = timed_pipeline(fixed_corpus, out / "data-fixed", out / "home-fixed")
    # In this process the workers' fork server the main run started is kept; a user's run starts its own.
    fixed["fresh_process_wall_seconds"] = fresh_process_run(fixed_corpus, out / "data-fixed", out / "home-fixed")
    small_total = extras.small_batches * extras.small_batch
    one = timed_pipeline(corpus(f"small-1x{small_total}", small_total, 1), out / "data-small", out / "home-small")
    many = timed_pipeline(
        corpus(f"small-{extras.small_batches}x{extras.small_batch}", small_total, extras.small_batches),
        out / "data-small",
        out / "home-small",
    )
    # One more batch on the corpus just built: its batch run and the corpus refresh, as a daily drop pays them.
    drop = corpus(f"drop-{extras.incremental}", extras.incremental, 1)
    new_batch = raw / f"zz-incremental-{extras.incremental}"
    shutil.copytree(next(p for p in drop.iterdir() if p.is_dir()), new_batch)
    try:
        started = time.monotonic()
        outcome = materialize_all(settings, instance, echo=lambda line: None)
        incremental = {"wall_seconds": round(time.monotonic() - started, 1), "failed": outcome.failed}
    finally:
        shutil.rmtree(new_batch)
    return {
        "fixed": {"trajectories": extras.fixed, "batches": batches, **fixed},
        "small_batches": {
            "trajectories": small_total,
            "batches": extras.small_batches,
            "wall_seconds": many["wall_seconds"],
            "one_batch_wall_seconds": one["wall_seconds"],
            "seconds_per_batch": round(
                (many["wall_seconds"] - one["wall_seconds"]) / max(extras.small_batches - 1, 1), 2
            ),
        },
        "incremental": {"trajectories": extras.incremental, **incremental},
        "dagster_alone": framework_floor(out / "home-no-work", extras.floor_runs),
    }


def marginal(figures: dict) -> dict:
    """The main run beyond the fixed cost, per 1,000 trajectories, beside the naive reference's."""
    fixed, size = figures["extra_runs"]["fixed"], figures["trajectories"]
    wall = figures["wall_seconds"] - fixed["wall_seconds"]
    cpu = figures["cpu_seconds"] - fixed["cpu_seconds"]
    naive = figures.get("naive_reference_seconds")
    return {
        "wall_seconds": round(wall, 1),
        "wall_per_1000": round(wall / size * 1000, 3),
        "cpu_seconds": round(cpu, 1),
        "cpu_per_1000": round(cpu / size * 1000, 3),
        "naive_reference_per_1000": round(naive / size * 1000, 3) if naive else None,
        "over_naive_reference": round(wall / naive, 2) if naive else None,
    }


def default_batches(size: int) -> int:
    """Four batches, or more once a batch would pass 20,000 runs: a larger corpus is more batches of the same size."""
    return max(4, -(-size // BATCH_TRAJECTORIES))


def generate_corpus(raw: Path, size: int, batches: int, seed: int) -> None:
    """Generate the corpus in its own process: the generator's memory is not the pipeline's."""
    print(f"generating {size} trajectories in {batches} batches ...", flush=True)
    options = {"--out": raw, "--trajectories": size, "--batches": batches, "--seed": seed}
    command = [sys.executable, "-m", "cowork_cli", "generate", *(str(x) for pair in options.items() for x in pair)]
    subprocess.run(command, check=True)


def bench(size: int, batches: int, out: Path, seed: int = 1, extras: Extras | None = None) -> dict:
    """The main run's figures; with `extras` (the CLI's `Extras()`), the runs that separate its fixed cost."""
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    raw = out / f"raw-{size}"
    if not (raw / "manifest.json").exists():
        generate_corpus(raw, size, batches, seed)
    data, home = out / f"data-{size}", out / f"home-{size}"
    for folder in (data, home):
        if folder.exists():
            shutil.rmtree(folder)
    os.sync()  # the write-back of a fresh corpus or of the removed outputs is not the measured run's work
    # settle_seconds=0: it wrote the corpus itself. parallel_from_mb=0: batches in workers at every size, as a
    # corpus past parallel_from_mb runs, so a small run measures the fixed cost of the large runs' layout.
    settings = CurateSettings(raw_root=str(raw), data_root=str(data), settle_seconds=0, parallel_from_mb=0)
    raw_mb = sum(p.stat().st_size for p in raw.rglob("*.jsonl*")) / 1e6
    instance = ensure_instance(home)
    # This process imported the code before the timed runs; the batch workers' fork server does too, so that every
    # timed run finds it running (a new `cowork-curate run` process pays both: `fresh_process_run`).
    fork_server = start_fork_server(home, min(settings.max_concurrent, batches))
    since = time.time()
    with PeakMemory() as memory:
        started = time.monotonic()
        outcome = materialize_all(settings, instance, echo=print)
        wall = time.monotonic() - started
    spans = phase_spans(instance, since)
    steps = {k: round(v, 1) for k, v in per_asset_seconds(instance, since).items()}
    step_cpu = per_asset_cpu_seconds(instance, since, memory)
    digests = content_digests(str(data))  # before the incremental run adds a batch
    floor = floor_seconds(raw, data, settings.token_encoding, settings.tokenizer_processes)
    naive = naive_reference_seconds(raw, out / f"naive-{size}.parquet")
    figures = {
        "trajectories": size,
        "batches": batches,
        "raw_mb": round(raw_mb, 1),
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(sum(sum(sample.cpu.values()) for sample in memory.samples), 1),
        "trajectories_per_second": round(size / wall, 1),
        "mb_per_second": round(raw_mb / wall, 2),
        "peak_memory_mb": round(memory.peak),
        "peak_at_seconds": round(memory.peak_at, 1),
        "peak_processes": memory.peak_processes,
        "floor": floor,
        "wall_over_floor": round(wall / max(floor["seconds"], 0.01), 2),
        "wall_over_strict_floor": round(wall / max(floor["strict_seconds"], 0.01), 2),
        "naive_reference_seconds": naive,
        "wall_over_naive_reference": round(wall / naive, 2) if naive else None,
        "max_concurrent": settings.max_concurrent,
        "fork_server_seconds": fork_server,
        "failed": outcome.failed,
        "phase_seconds": phase_seconds(spans, since, wall),
        "phase_cpu_seconds": phase_cpu_seconds(memory.samples, spans, since),
        "phase_peaks": phase_peaks(memory.samples, spans) if spans["batches"] else {},
        "cross_batch_step_peaks": cross_batch_step_peaks(instance, since, memory.samples),
        "per_asset_seconds": steps,
        "per_asset_cpu_seconds": step_cpu,
        "content_digests": digests,  # to compare outputs across code versions
    }
    if extras:
        figures["extra_runs"] = extra_runs(out, size, batches, raw, settings, instance, extras, seed)
        figures["marginal"] = marginal(figures)
    earlier = (orjson.loads(f.read_bytes()) for f in out.glob("bench-*.json"))
    # (Figures of earlier versions, which could count a forking process twice, do not compare.)
    smaller = sorted((f for f in earlier if "peak_memory_mb" in f), key=lambda f: f["trajectories"])
    if smaller and smaller[0]["trajectories"] < size:  # growth from the smallest earlier run in the same folder
        base = smaller[0]
        figures["growth"] = {
            "from_trajectories": base["trajectories"],
            "wall": round(wall / base["wall_seconds"], 2),
            "peak_memory": round(memory.peak / base["peak_memory_mb"], 2),
        }
    (out / f"bench-{size}.json").write_bytes(orjson.dumps(figures, option=orjson.OPT_INDENT_2))
    return figures


def _by_role(processes: list[dict]) -> str:
    """ "1800 MB 2 x batch worker, 452 MB main process, ...": memory by role, largest first."""
    roles: dict[str, list[int]] = defaultdict(list)
    for p in processes:
        roles[p["process"]].append(p["mb"])
    return ", ".join(
        f"{sum(mbs)} MB " + (f"{len(mbs)} x {role}" if len(mbs) > 1 else role)
        for role, mbs in sorted(roles.items(), key=lambda kv: -sum(kv[1]))
    )


def report(figures: dict) -> str:
    lines = [
        f"{figures['trajectories']} trajectories in {figures['batches']} batches ({figures['raw_mb']} MB raw)",
        f"  wall            {figures['wall_seconds']} s  ({figures['trajectories_per_second']} traj/s, "
        f"{figures['mb_per_second']} MB/s)",
        f"  peak memory     {figures['peak_memory_mb']} MB "
        f"(all processes; {figures['peak_at_seconds']} s into the run: " + _by_role(figures["peak_processes"]) + ")",
        f"  floor           {figures['floor']['seconds']} s (read {figures['floor']['read_seconds']} s + tokenize "
        f"SFT text {figures['floor']['tokenize_seconds']} s with tiktoken's batch API, the best of "
        f"{', '.join(map(str, figures['floor']['tokenize_runs']))} s); wall / floor = {figures['wall_over_floor']}",
        f"  strict floor    {figures['floor']['strict_seconds']} s (the same text tokenized as the pipeline does "
        f"it: {figures['floor']['tokenize_loop_seconds']} s); wall / strict floor = "
        f"{figures['wall_over_strict_floor']}",
        *(
            [
                f"  naive reference {figures['naive_reference_seconds']} s (bench/naive_reference.py: part of the "
                f"job, one process); wall / naive reference = {figures['wall_over_naive_reference']}"
            ]
            if figures.get("naive_reference_seconds")
            else []
        ),
        *(
            [
                f"  fixed cost      {x['fixed']['wall_seconds']} s wall, {x['fixed']['cpu_seconds']} s cpu (the same "
                f"pipeline on {x['fixed']['trajectories']} trajectories in {x['fixed']['batches']} batches, in this "
                f"process, its imports and the workers' fork server ({figures['fork_server_seconds']} s) done before); "
                f"as a new `cowork-curate run` process: {x['fixed']['fresh_process_wall_seconds']} s wall",
                f"  marginal        {m['wall_seconds']} s wall ({m['wall_per_1000']} s per 1,000 trajectories"
                + (
                    f"; naive reference {m['naive_reference_per_1000']} s per 1,000: x{m['over_naive_reference']}"
                    if m["naive_reference_per_1000"]
                    else ""
                )
                + f"), {m['cpu_seconds']} s cpu ({m['cpu_per_1000']} s per 1,000)",
                f"  small batches   {x['small_batches']['batches']} batches of "
                f"{x['small_batches']['trajectories'] // x['small_batches']['batches']}: "
                f"{x['small_batches']['wall_seconds']} s; the same {x['small_batches']['trajectories']} trajectories "
                f"in one batch: {x['small_batches']['one_batch_wall_seconds']} s: "
                f"{x['small_batches']['seconds_per_batch']} s per batch beyond the one-batch run",
                f"  incremental     one batch of {x['incremental']['trajectories']} dropped onto the corpus: "
                f"{x['incremental']['wall_seconds']} s (its batch run and the corpus refresh)",
                f"  Dagster alone   {x['dagster_alone']['seconds_per_batch_run']} s per batch run, "
                f"{x['dagster_alone']['seconds_per_batch_in_one_run']} s per batch in one run over them, "
                f"{sum(x['dagster_alone']['corpus_runs_seconds'].values()):.2f} s for the corpus jobs "
                f"(these jobs' assets and checks with no work done, {x['dagster_alone']['batch_runs']} batch runs "
                "one after another)",
            ]
            if (x := figures.get("extra_runs")) and (m := figures["marginal"])
            else []
        ),
        *(
            [f"  growth from {g['from_trajectories']} trajectories: wall x{g['wall']}, peak memory x{g['peak_memory']}"]
            if (g := figures.get("growth"))
            else []
        ),
        *(
            [
                f"  phases          {p['startup']} s starting, {p['batches']} s batches (in parallel), "
                f"{p['cross_batch']} s cross-batch, {p['other']} s between and after runs"
            ]
            if (p := figures.get("phase_seconds"))
            else []
        ),
        *(
            [
                f"  cpu             {c['startup']} s starting, {c['batches']} s batches, {c['cross_batch']} s "
                f"cross-batch, {c['other']} s between and after runs (all processes; cpu / wall = cores busy)"
            ]
            if (c := figures.get("phase_cpu_seconds"))
            else []
        ),
        *(
            [
                "  phase peaks     "
                + "; ".join(
                    f"{phase.replace('_', '-')} {peak['mb']} MB ("
                    + ", ".join(f"{p['mb']} MB {p['process']}" for p in peak["processes"])
                    + ")"
                    for phase, peak in peaks.items()
                )
            ]
            if (peaks := figures.get("phase_peaks"))
            else []
        ),
        *(
            ["  cross-batch step peaks (MB, all processes; the selection steps hold one task bucket at a time):"]
            + [f"    {k:<40} {v:>8} MB" for k, v in steps.items()]
            if (steps := figures.get("cross_batch_step_peaks"))
            else []
        ),
        "  time per asset (summed over runs):                wall        cpu",
    ]
    cpu = figures.get("per_asset_cpu_seconds", {})
    lines += [f"    {k:<40} {v:>8.1f} s {cpu.get(k, 0.0):>8.1f} s" for k, v in figures["per_asset_seconds"].items()]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """`make bench`: the whole run, its report printed and its figures written; with FLOOR first, the floor measured
    in this fresh interpreter (`floor_seconds`), as JSON on stdout."""
    if argv[:1] == [FLOOR]:
        raw_root, data_root, encoding, workers = argv[1:]
        sys.stdout.buffer.write(orjson.dumps(_measure_floor(Path(raw_root), Path(data_root), encoding, int(workers))))
        return 0
    import argparse

    p = argparse.ArgumentParser(prog="python -m bench.harness", description=main.__doc__)
    p.add_argument("--size", type=int, default=20000, help="trajectories [20000]")
    p.add_argument(
        "--batches",
        type=int,
        help="batches [4, or one per 20,000 trajectories: a batch is a day's drop, not the corpus]",
    )
    p.add_argument("--out", default="bench", help="folder for the corpus, outputs and bench-<size>.json [bench]")
    args = p.parse_args(argv)
    batches = args.batches or default_batches(args.size)
    if args.size < 1 or batches < 1:
        p.error("--size and --batches must be positive")
    figures = bench(args.size, batches, Path(args.out), extras=Extras())
    print("\n" + report(figures))
    print(f"\nfigures written to {Path(args.out) / f'bench-{args.size}.json'}")
    return 1 if figures["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
