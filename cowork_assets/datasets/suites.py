"""The published datasets' Great Expectations suites, run in a helper process.

Great Expectations takes seconds of CPU to import (scipy, altair, its expectation modules). In the
process that runs the batches it would take that time from them; a helper process started with the run that
gates the datasets imports it on a core that the cross-batch steps leave idle, then runs each suite on
the flat validation view, handed over as an Arrow IPC file: one JSON request per line on its stdin,
one JSON reply per line on its stdout (see `helper_process`).
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from contextlib import suppress

import orjson
import polars as pl

from cowork_assets.runtime import scratch
from cowork_assets.runtime.helper_process import HelperProcess, write_line
from cowork_assets.runtime.paths import project_dir
from cowork_assets.runtime.procfs import die_with_parent


class SuiteProcessError(RuntimeError):
    pass


def run_suite(dataset: str, view: pl.DataFrame, parameters: dict) -> list[dict]:
    """Failed expectations of the dataset's GX suite on its validation view: [{expectation, column,
    unexpected, examples}]. Runs in the process that calls it (the helper does)."""
    import great_expectations as gx  # noqa: PLC0415 - slow import, only where a suite runs

    spec = orjson.loads((project_dir("expectations") / f"{dataset}.json").read_bytes())
    suite = gx.ExpectationSuite(
        name=spec["name"],
        expectations=[
            gx.expectations.registry.get_expectation_impl(e["type"])(**e["kwargs"]) for e in spec["expectations"]
        ],
    )
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = {"globally": False}
    batch = (
        context.data_sources.add_pandas(dataset)
        .add_dataframe_asset("published")
        .add_batch_definition_whole_dataframe("all")
        .get_batch(batch_parameters={"dataframe": view.to_pandas()})
    )
    # BASIC holds all a failure reports (its count, or the value observed, and up to 20 examples); the default,
    # SUMMARY, also counts each unexpected value: a third more of the suites' time.
    result = batch.validate(suite, expectation_parameters=parameters, result_format="BASIC")
    return [
        {
            "expectation": r.expectation_config.type,
            "column": r.expectation_config.kwargs.get("column", ""),
            "unexpected": r.result.get("unexpected_count", r.result.get("observed_value")),
            "examples": str(r.result.get("partial_unexpected_list", ""))[:200],
        }
        for r in result.results
        if not r.success
    ]


READY = b'{"ready": true}'  # the helper's first line, once it has imported Great Expectations


class SuiteProcess(HelperProcess):
    """The helper process (`python -m cowork_assets.datasets.suites`): it has imported Great
    Expectations by the time it is first asked, if it was started early enough. It imports at the lowest priority
    unless told otherwise (`first_ready`)."""

    def __init__(self, low_priority: bool = True) -> None:
        super().__init__("cowork_assets.datasets.suites", *(["--low-priority"] if low_priority else []))
        self._ready = False

    def ready(self, timeout: float | None = 0) -> bool:
        """Whether it has imported Great Expectations (its first line says so), waiting up to `timeout` seconds for
        it (None: until it has, or has exited)."""
        if not self._ready and self.readable(timeout):
            self._ready = (self.receive() or b"").rstrip() == READY
        return self._ready

    def failures(self, dataset: str, view: pl.DataFrame, parameters: dict) -> list[dict]:
        """Failed expectations of `dataset`'s suite on `view` (see `run_suite`)."""
        if not self.ready(timeout=None):
            raise SuiteProcessError(f"the Great Expectations process failed {self.failure()}")
        with tempfile.NamedTemporaryFile(suffix=".arrow", dir=scratch.folder()) as file:
            view.write_ipc(file.name, compression="uncompressed")
            self.send(orjson.dumps({"dataset": dataset, "view": file.name, "parameters": parameters}))
            reply = self.receive()
        if reply is None:
            raise SuiteProcessError(f"the Great Expectations process failed {self.failure()}")
        answer = orjson.loads(reply)
        if "error" in answer:
            raise SuiteProcessError(f"the {dataset} suite could not run: {answer['error']}")
        return answer["failures"]

    def raise_priority(self) -> bool:
        """Bring the helper, each of its threads, to this process's priority: whether the system let this user (one
        with CAP_SYS_NICE: root on a machine or VM, a container's only where granted; for others a niceness once
        raised stays) and the helper is still there."""
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        try:
            threads = sorted(int(thread) for thread in os.listdir(f"/proc/{self.pid}/task"))  # the main one first
        except OSError:  # no /proc (macOS), or the helper has exited
            threads = [self.pid]
        try:
            for thread in threads:
                with suppress(ProcessLookupError):  # a thread that ended meanwhile
                    os.setpriority(os.PRIO_PROCESS, thread, mine)
        except PermissionError:
            return False
        return self.running()


_spare: SuiteProcess | None = None


def start_early() -> None:
    """Start a helper now for the next run with gates in this process, so that it imports Great Expectations
    while other work runs (`cowork-curate run` does this first, before it imports the pipeline; a run in the UI starts
    its own)."""
    global _spare
    if _spare is None or not _spare.running():
        _spare = SuiteProcess()


def first_ready(process: SuiteProcess) -> SuiteProcess:
    """`process` if it has imported Great Expectations by now, or once brought to normal priority where the system
    allows it (it goes on from where it is); else whichever has first of it and a new helper at normal priority, the
    other closed. A helper imports at the lowest priority, on cycles the run leaves idle: on a machine that other
    work keeps busy it gets none, and a gate would wait on it for as long as that work runs."""
    if process.ready() or process.raise_priority():
        return process
    fresh = SuiteProcess(low_priority=False)
    while not (chosen := next((h for h in (process, fresh) if h.ready(timeout=0.05)), None)):
        if not fresh.running() and not process.running():  # neither can: the gate reports the new one's failure
            chosen = fresh
            break
    (fresh if chosen is process else process).close()
    return chosen


def suite_process() -> SuiteProcess:
    """The helper started early, if there is one alive, else a new one."""
    global _spare
    process, _spare = _spare, None
    return process if process is not None and process.running() else SuiteProcess()


def give_back(process: SuiteProcess) -> None:
    """Keep a helper that is still alive for the next run in this process (it has imported Great
    Expectations already; it dies with this process); close it if one is kept already."""
    global _spare
    if _spare is None and process.running():
        _spare = process
    else:
        process.close()


def _serve(low_priority: bool) -> None:
    """The helper's loop. Replies go to the real stdout; anything a library prints goes to stderr. At the
    lowest priority if `low_priority`: it imports on cycles the run's own steps leave idle (at normal priority it
    slowed them by more than it saved the batches)."""
    die_with_parent()  # started early, it may outlive a run that was killed
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    if low_priority:
        os.nice(19)
    import great_expectations  # noqa: F401, PLC0415 - imported now, before the first request

    write_line(replies, READY)

    for line in sys.stdin.buffer:
        request = orjson.loads(line)
        try:
            answer = {"failures": run_suite(request["dataset"], pl.read_ipc(request["view"]), request["parameters"])}
        except Exception as exc:  # noqa: BLE001 - reported to the gate, which fails with it
            answer = {"error": "".join(traceback.format_exception_only(exc)).strip()}
        write_line(replies, orjson.dumps(answer, default=str, option=orjson.OPT_SERIALIZE_NUMPY))


if __name__ == "__main__":
    _serve(low_priority="--low-priority" in sys.argv[1:])
