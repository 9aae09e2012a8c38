"""Harbor's trial result (`result.json`: `{task_name, trial_name, verifier_result: {rewards: {reward, ...}},
exception_info, agent_info, ...}`), which Harbor writes beside the trial's ATIF trajectory.

Auxiliary: it grades the ATIF trajectory beside it. Batches are flat, so a trial's files sit in one folder
under names that pair them: `<name>.result.json` grades `<name>.trajectory.json` (and `result.json` grades
`trajectory.json`, or the batch's only ATIF file). The reward, in [0, 1], is the score, passed at 1; a result
with no `verifier_result`, a reward outside [0, 1] or an `exception_info` (the harness failed, not the agent)
leaves the run ungraded. `task_name` becomes the task id."""

from __future__ import annotations

NAME = "harbor_result"
PRIORITY = 10
AUXILIARY = True
SUFFIX = "result.json"


def detect(sample) -> bool:
    doc = sample.document
    return isinstance(doc, dict) and "verifier_result" in doc and ("task_name" in doc or "trial_name" in doc)


def prefix(file_name: str) -> str:
    """`hello.trajectory.json` -> `hello.`; `trajectory.json` -> ``: what pairs a trajectory with its result."""
    return file_name.rsplit("trajectory.json", 1)[0] if file_name.endswith("trajectory.json") else file_name


def result_for(batch, sample) -> dict | None:
    """The Harbor result beside an ATIF file of the batch (None when there is none)."""
    results = {s.path.name: s.document for s in batch.auxiliary(NAME)}
    paired = results.get(prefix(sample.path.name) + SUFFIX)
    if paired is None and len(results) == 1:
        atif_files = [s for s, fmt in batch.samples.values() if fmt.NAME == "atif"]
        paired = next(iter(results.values())) if len(atif_files) == 1 else None
    return paired


def grade(result: dict | None) -> dict | None:
    if not isinstance(result, dict) or result.get("exception_info"):
        return None
    reward = ((result.get("verifier_result") or {}).get("rewards") or {}).get("reward")
    if isinstance(reward, bool) or not isinstance(reward, int | float) or not 0 <= reward <= 1:
        return None
    return {"score": float(reward), "passed": reward == 1, "checks": {"verifier_result.reward": reward == 1}}


def records(sample, batch):
    return iter(())
