"""SWE-bench reports beside coding-agent runs, in the shapes the harness and sb-cli write them:

* a summary with id lists: `resolved_ids`, and `unresolved_ids`, `error_ids`, ... (the harness's run report,
  sb-cli's report);
* a per-instance `report.json` keyed by instance id: `{"<instance_id>": {"resolved": true, "tests_status": ...}}`;
* the same object without the key, `{"resolved": true, "tests_status": ...}`: its instance is the folder it sits
  in when it is named `report.json` (the harness's `logs/run_evaluation/<run>/<model>/<instance_id>/report.json`),
  else its file name, `<instance_id>.report.json` or `<instance_id>.json` (a `report.json` directly in the batch
  folder names no instance).

Auxiliary: a coding-agent run whose instance a report resolves passed, one a report lists otherwise failed
(ids under `submitted_ids` or `completed_ids` alone say nothing); the grade names the report
(`grade_checks`: `{"<report file>": resolved}`). Without a report the run is ungraded and `accept_ungraded`
decides whether it may reach SFT."""

from __future__ import annotations

from pathlib import PurePosixPath

from cowork_assets.ingest import recount

NAME = "swebench_report"
PRIORITY = 10
RECORDS = recount.NONE
AUXILIARY = True
NEUTRAL_LISTS = ("submitted_ids", "completed_ids")


def _per_instance(value) -> bool:
    return isinstance(value, dict) and isinstance(value.get("resolved"), bool)


def detect(sample) -> bool:
    doc = sample.document
    if not isinstance(doc, dict) or not doc:
        return False
    if isinstance(doc.get("resolved_ids"), list):
        return True
    if _per_instance(doc) and "tests_status" in doc:
        return True
    return all(_per_instance(v) for v in doc.values())


def records(sample, batch):
    return iter(())


def _unkeyed_instance(sample) -> str | None:
    name = sample.path.name.removesuffix(".json").removesuffix(".report")
    if name != "report":
        return name
    folders = PurePosixPath(sample.rel).parts[1:-1]  # below the batch folder
    return folders[-1] if folders else None


def verdicts(sample) -> dict[str, bool]:
    """instance id -> resolved, as one report says."""
    doc = sample.document
    if isinstance(doc.get("resolved_ids"), list):
        out = {}
        for key, ids in doc.items():
            if key.endswith("_ids") and key not in NEUTRAL_LISTS and isinstance(ids, list):
                out.update((str(i), False) for i in ids if str(i) not in out)
        out.update((str(i), True) for i in doc["resolved_ids"])
        return out
    if _per_instance(doc) and "tests_status" in doc:
        instance = _unkeyed_instance(sample)
        return {instance: doc["resolved"]} if instance else {}
    return {str(k): v["resolved"] for k, v in doc.items()}


def _graded(batch) -> dict[str, tuple[bool, str]]:
    """instance id -> (resolved, the report saying so), a resolving report first, else the first to name it."""
    found: dict[str, tuple[bool, str]] = {}
    for sample in batch.auxiliary(NAME):
        for instance, verdict in verdicts(sample).items():
            if instance not in found or verdict and not found[instance][0]:
                found[instance] = (verdict, sample.rel)
    return found


def grade(batch, instance_id: str) -> dict | None:
    """The grade the batch's reports give the instance (a resolving report first), or None when none names it."""
    found = batch.once(NAME, lambda: _graded(batch)).get(instance_id)
    if found is None:
        return None
    passed, source = found
    return {"score": 1.0 if passed else 0.0, "passed": passed, "checks": {source: passed}}
