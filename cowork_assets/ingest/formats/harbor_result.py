"""Harbor's trial result (`result.json`: `{task_name, trial_name, verifier_result: {rewards: {reward, ...}},
exception_info, agent_info, ...}`), which Harbor writes beside the trial's ATIF trajectory.

Auxiliary: it grades the ATIF trajectory of its trial. Harbor lays a trial out as `<trial>/result.json` beside
`<trial>/agent/trajectory.json`: a `result.json` grades the ATIF files in its folder and below it (the nearest
one, when results are nested). In a flat folder, names pair them: `<name>.result.json` grades
`<name>.trajectory.json`; a batch's only result grades its only ATIF file. The reward, in [0, 1], is the score,
passed at 1; a result with no `verifier_result`, a reward outside [0, 1] or an `exception_info` (the harness
failed, not the agent) leaves the run ungraded. `task_name` becomes the task id."""

from __future__ import annotations

from pathlib import PurePosixPath

from cowork_assets.ingest import recount

NAME = "harbor_result"
PRIORITY = 10
RECORDS = recount.NONE
AUXILIARY = True
SUFFIX = "result.json"


def detect(sample) -> bool:
    doc = sample.document
    return isinstance(doc, dict) and "verifier_result" in doc and ("task_name" in doc or "trial_name" in doc)


def prefix(file_name: str) -> str:
    """`hello.trajectory.json` -> `hello.`; `trajectory.json` -> ``: what pairs a trajectory with its result."""
    return file_name.rsplit("trajectory.json", 1)[0] if file_name.endswith("trajectory.json") else file_name


def result_for(batch, sample, sub_trajectory: bool = False) -> dict | None:
    """The Harbor result of an ATIF file of the batch (None when there is none). A sub-trajectory (a sub-run the
    trial's main trajectory refers to) is graded only by a result named after it: the trial's reward is its
    main run's."""
    results = batch.once(NAME, lambda: {PurePosixPath(s.rel): s.document for s in batch.auxiliary(NAME)})
    path = PurePosixPath(sample.rel)
    paired = results.get(path.with_name(prefix(path.name) + SUFFIX))
    if sub_trajectory:
        return paired
    if paired is None:  # the nearest trial folder's
        paired = next((results[r] for folder in path.parents if (r := folder / SUFFIX) in results), None)
    if paired is None and len(results) == 1:
        atif_files = batch.once("atif_files", lambda: sum(fmt.NAME == "atif" for _, fmt in batch.samples.values()))
        paired = next(iter(results.values())) if atif_files == 1 else None
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
