"""A coding task's sandbox: what an RL trainer needs to rebuild and grade it, as ingest stores it in the task's
initial state, and when it can be rebuilt (the rule the readers, the task checks and the RL rows share)."""

from __future__ import annotations

import orjson

SANDBOX_FIELDS = ("instance_id", "repo", "base_commit", "version", "image", "problem_statement")
# What a sandbox needs to rebuild a coding task besides its instance id: the repository, or an image holding it.
SANDBOX_SOURCES = ("repo", "image")
SANDBOX_TESTS = ("FAIL_TO_PASS", "PASS_TO_PASS")
# A stored initial state is compact JSON that ingest wrote, keys as they are: a state without this text names no
# sandbox, and need not be parsed to say so.
SANDBOX_KEY = '"sandbox"'


def rebuildable(box: dict) -> bool:
    """Whether a sandbox can rebuild a coding task from what its log carries: its repository or image."""
    return any(box.get(k) for k in SANDBOX_SOURCES)


def sandbox(instance_id: str, fields: dict | None = None) -> dict:
    """A coding task's `initial_state`: `{"sandbox": ...}`, what a sandbox RL trainer needs to rebuild and grade
    it (the instance id, and what the log carries of its repository, base commit, image, problem statement
    and the tests that must pass); test lists written as JSON text become lists. Only a `rebuildable` one is an
    RL task."""
    fields = fields if isinstance(fields, dict) else {}
    box = {**{k: v for k, v in fields.items() if k in SANDBOX_FIELDS and v}, "instance_id": instance_id}
    for name in SANDBOX_TESTS:
        tests = fields.get(name)
        if isinstance(tests, str):
            try:
                tests = orjson.loads(tests)
            except orjson.JSONDecodeError:
                tests = [tests]
        if isinstance(tests, list) and tests:
            box[name] = [str(t) for t in tests]
    return {"sandbox": box}
