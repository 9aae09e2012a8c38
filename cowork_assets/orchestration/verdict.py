"""A batch's state and the publication verdict, in one place: whether a batch is to be processed, what its run
records when it starts and when it finishes, and whether the corpus may be published now, and without which batches.

The runner (`cowork-curate run`), the sensors and the publish steps ask here; the facts live in the store
(store/batch_state.py: raw files' fingerprints, manifests, the lock of a batch's commit) and in the instance's run
records. A batch counts as processed only while its manifest verifies; its manifest records its run's checks, so the
verdict is the same on every instance and machine.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property

import dagster as dg

from cowork_assets.markdown import table
from cowork_assets.orchestration import partitions
from cowork_assets.settings import Settings
from cowork_assets.store import batch_state, lease
from cowork_assets.store.raw_files import discover_batches

CHECK_EVALUATION = dg.DagsterEventType.ASSET_CHECK_EVALUATION
MANIFEST = dg.AssetKey("batch_manifest")  # a batch's last table: written once all the others are


# A batch
def settings_fingerprint(settings: Settings) -> str:
    """The settings that shape a batch's outputs and the code of its assets, as one digest."""
    return batch_state.settings_fingerprint(settings.batch_content())


def not_ready(settings: Settings, batch: str) -> tuple[str, bool] | None:
    """Why the batch folder is not to be read yet, and whether waiting will do; None when it is ready."""
    return batch_state.not_ready(settings.raw_path, batch, settings.settle_seconds, settings.batch_ready_marker)


@dataclass(frozen=True)
class ToProcess:
    batch: str
    why: str  # new, its raw files or the settings changed, or its tables are damaged
    key: str  # the state of its raw files and the settings: one run per state


def to_process(settings: Settings, batch: str, deep: bool = True) -> ToProcess | None:
    """Why the batch must be processed (again), or None while its manifest verifies (tables by digest when `deep`,
    else by size) against its raw files and the settings as they are now."""
    fingerprint = settings_fingerprint(settings)
    raw = batch_state.raw_fingerprint(settings.raw_path, batch)
    state = batch_state.check(settings.root, settings.raw_path, batch, fingerprint, deep=deep, raw=raw)
    return ToProcess(batch, state.problem, f"{raw[:12]}:{fingerprint[:12]}") if state.problem else None


def not_in_raw_root(settings: Settings) -> list[str]:
    """Processed batches whose folder is gone from the raw root."""
    return sorted(set(batch_state.processed_batches(settings.root)) - set(discover_batches(settings.raw_path)))


def start(settings: Settings, batch: str, run_id: str, waiting: Callable[[str], None]) -> None:
    """Ingest begins: the raw files' fingerprint before they are read (a file changed during the run makes the batch
    stale) and the settings, under the batch's lock (`waiting` is told who holds it)."""
    raw = batch_state.raw_fingerprint(settings.raw_path, batch)
    batch_state.start(settings.root, batch, raw, settings_fingerprint(settings), run_id, waiting=waiting)


def finish(instance: dg.DagsterInstance, settings: Settings, batch: str, run_id: str) -> dict:
    """The batch's last step: its tables moved into place and its manifest written, with its run's checks."""
    return batch_state.finish(settings.root, batch, run_id, run_verdict(instance, run_id, batch))


def drop(root: str, batch: str) -> bool:
    """Take a processed batch out of the corpus (its tables and manifest); False if there is no such batch."""
    if batch not in batch_state.processed_batches(root):
        return False
    batch_state.drop(root, batch)
    return True


def run_verdict(instance: dg.DagsterInstance, run_id: str, batch: str) -> dict:
    """What a batch's manifest keeps of its run's checks of the batch: each evaluated check's result and severity,
    and where the run ran (the instance's folder, when it has one)."""
    checks = {
        f"{e.asset_key.to_user_string()}:{e.check_name}": {"passed": e.passed, "severity": e.severity.value}
        for e in _evaluations(instance, run_id, batch)
    }
    return {"checks": checks, "run_id": run_id, "instance": instance.root_directory, "host": socket.gethostname()}


def corpus_version(settings: Settings) -> str:
    """Which state of the corpus the tables hold (a batch committed, redone or dropped changes it)."""
    return batch_state.corpus_version(settings.root)


# The corpus
@dataclass(frozen=True)
class Batch:
    state: batch_state.BatchState
    failed_checks: dict[str, str]  # `asset:check` -> severity, of the checks its run failed

    @property
    def errors(self) -> list[str]:
        """The ERROR-severity checks its run failed."""
        return sorted(name for name, severity in self.failed_checks.items() if severity == "ERROR")


@dataclass
class Corpus:
    """Each processed batch now, and what publication makes of them."""

    instance: dg.DagsterInstance
    settings: Settings
    batches: list[Batch]

    @cached_property
    def held_back(self) -> dict[str, str]:
        """The batches publication leaves out (`hold_back_refused_batches`): batch -> the ERROR checks that refused
        it."""
        if not self.settings.hold_back_refused_batches:
            return {}
        return {b.state.batch: ", ".join(b.errors) for b in self.batches if b.errors}

    @cached_property
    def blocked(self) -> str | None:
        """Why no dataset may be published now, naming the batches; None: it may."""
        return _blocked(self.instance, self.settings, self.batches)

    def card(self) -> list[dict]:
        """What a dataset card says of the batches it was built from: the run and the settings each was processed
        with (one fingerprint for all: publication refuses a mix), and the ERROR checks it failed, whether it was
        published anyway or held back."""
        return [
            {
                "batch": b.state.batch,
                "run_id": b.state.run_id,
                "settings": (b.state.settings or "")[:16],
                "failed_error_checks": b.errors,
                "held_back": b.state.batch in self.held_back,
            }
            for b in self.batches
        ]

    def checks_summary(self) -> str:
        """Markdown: each check that failed on some batch, its severity and the batches it failed on. An asset's
        overview shows the latest partition's checks only, so this says what the other partitions' runs found."""
        failing: dict[tuple[str, str], list[str]] = {}
        for b in self.batches:
            for name, severity in b.failed_checks.items():
                failing.setdefault((name, severity), []).append(b.state.batch)
        if not failing:
            return f"Every check passed on each of the {len(self.batches)} batch(es)."
        rows = [
            (name, severity, f"{len(names)} of {len(self.batches)}", ", ".join(names))
            for (name, severity), names in sorted(failing.items(), key=lambda kv: (kv[0][1] != "ERROR", kv[0][0]))
        ]
        return table(["check", "severity", "batches failed", "batches"], rows)


def corpus_now(instance: dg.DagsterInstance, settings: Settings, deep: bool = True) -> Corpus:
    """The corpus as publication judges it: each batch's state (tables by digest when `deep`, else by size) and
    the checks its run failed, the batches held back (`hold_back_refused_batches`), and why publication is blocked."""
    fingerprint = settings_fingerprint(settings)
    states = batch_state.processed_states(settings.root, settings.raw_path, fingerprint, deep)
    return Corpus(instance, settings, [Batch(s, _recorded(instance, s) if not s.problem else {}) for s in states])


def _recorded(instance: dg.DagsterInstance, state: batch_state.BatchState) -> dict[str, str]:
    """The checks a batch's run failed, as its manifest records them; a manifest written before manifests held a
    verdict falls back on this instance's record of the run."""
    return failed_checks(instance, state.run_id, state.batch) if state.failed_checks is None else state.failed_checks


def failed_checks(instance: dg.DagsterInstance, run_id: str | None, batch: str) -> dict[str, str]:
    """The checks of the batch that failed in a run, as `asset:check` -> severity (`ERROR` or `WARN`)."""
    if not run_id or instance.get_run_record_by_id(run_id) is None:
        return {}  # a run of another instance (or history deleted): no result to go by
    return {
        f"{e.asset_key.to_user_string()}:{e.check_name}": e.severity.value
        for e in _evaluations(instance, run_id, batch)
        if not e.passed
    }


# run_id -> (where the last read stopped, the check evaluations read so far), for the runs looked at last.
_READ: dict[str, tuple[str | None, list[dg.AssetCheckEvaluation]]] = {}
_RUNS_KEPT = 8


def _evaluations(instance: dg.DagsterInstance, run_id: str, batch: str) -> list[dg.AssetCheckEvaluation]:
    """The run's check evaluations of the batch (a run may process several batches, each its own partition). A run's
    log is read on from where the last look at it stopped: a run over many batches looks once per batch."""
    cursor, seen = _READ.pop(run_id, (None, []))
    found = instance.get_records_for_run(run_id, cursor=cursor, of_type=CHECK_EVALUATION)
    seen += [e for r in found.records if (e := r.event_log_entry.asset_check_evaluation) is not None]
    _READ[run_id] = (found.cursor, seen)
    while len(_READ) > _RUNS_KEPT:
        del _READ[next(iter(_READ))]
    return [e for e in seen if e.partition in (batch, None)]


def failed_batches(instance: dg.DagsterInstance, batches: list[str]) -> list[str]:
    """The batches whose latest attempt failed: a run that set out to write the batch's manifest failed before it did,
    whether it processed that batch alone or with others (a batch never run is not failed, nor one whose last run was
    canceled: it stays as that run found it)."""
    known = set(instance.get_dynamic_partitions(partitions.batches.name))
    status = instance.get_status_by_partition(MANIFEST, [b for b in batches if b in known], partitions.batches) or {}
    return [b for b in batches if status.get(b) == dg.AssetPartitionStatus.FAILED]


def _blocked(instance: dg.DagsterInstance, settings: Settings, batches: list[Batch]) -> str | None:
    """Why no dataset may be published now, or None: a batch whose last run failed, a processed batch whose tables
    are damaged, processed from other raw files or with other settings, or whose run failed an ERROR-severity
    check. Each reason names the batches."""
    reasons = []
    if settings.raw_path.is_dir() and not settings.publish_without_failed_batches:
        if failed := failed_batches(instance, discover_batches(settings.raw_path)):
            reasons.append(
                f"batch(es) {', '.join(failed)} failed, and no dataset is published without them (run them again, or "
                "set publish_without_failed_batches=true to publish the others)"
            )
    states = [b.state for b in batches]
    if damaged := [f"{s.batch} ({s.damage})" for s in states if s.damage]:
        reasons.append(f"batch(es) {'; '.join(damaged)}: run them again, or `cowork-curate drop` them")
    if stale := [f"{s.batch} ({s.stale})" for s in states if s.stale and not s.damage]:
        reasons.append(f"batch(es) {'; '.join(stale)}: they are redone before a dataset is built from them")
    if not settings.publish_despite_failed_checks and not settings.hold_back_refused_batches:
        if named := [f"{b.state.batch} ({', '.join(b.errors)})" for b in batches if b.errors]:
            reasons.append(
                f"ERROR check(s) failed on batch(es) {'; '.join(named)} (fix the cause and run them again, or set "
                "publish_despite_failed_checks=true to publish them as they are, or hold_back_refused_batches=true to "
                "publish the other batches without them)"
            )
    return "; ".join(reasons) or None


@contextmanager
def publisher_lock(settings: Settings, waiting: Callable[[str], None]) -> Iterator[None]:
    """One cross-batch step at a time on this data root: among this machine's processes by a file lock, and on
    an S3 data root among machines by its `publisher` lease. `waiting` is told who holds it."""
    local = settings.local_root
    with lease.file_lock(local / ".cross-batch.lock", waiting=lambda: waiting("another run on this machine")):
        if not lease.applies(settings.root):
            yield
            return
        with lease.held(settings.root, "publisher", waiting=lambda holder: waiting(f"{holder}, which holds the lease")):
            yield  # the cross-batch runs this process executes find the lease held (orchestration/resources.py)
