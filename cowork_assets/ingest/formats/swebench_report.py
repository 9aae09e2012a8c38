"""A SWE-bench style report beside coding-agent runs (any JSON object with a `resolved_ids` list).

Auxiliary: a coding-agent run whose instance is in `resolved_ids` passed, one listed among the report's
other ids (`unresolved_ids`, `error_ids`, ...) failed; without a report the run is ungraded and
`accept_ungraded` decides whether it may reach SFT."""

from __future__ import annotations

NAME = "swebench_report"
PRIORITY = 10
AUXILIARY = True


def detect(sample) -> bool:
    doc = sample.document
    return isinstance(doc, dict) and isinstance(doc.get("resolved_ids"), list)


def records(sample, batch):
    return iter(())


def resolved(batch, instance_id: str) -> bool | None:
    """Whether the batch's reports say the instance was resolved (None: no report names it)."""
    verdict = None
    for sample in batch.auxiliary(NAME):
        for key, ids in sample.document.items():
            if key.endswith("_ids") and isinstance(ids, list) and instance_id in ids:
                if key == "resolved_ids":
                    return True
                if key not in ("submitted_ids", "completed_ids"):
                    verdict = False
    return verdict
