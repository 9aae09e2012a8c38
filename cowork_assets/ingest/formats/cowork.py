"""`cowork.trajectory/v1` JSON Lines (`*.jsonl`, `*.jsonl.gz`), the native format: one trajectory per line.

Detection never guesses: a JSON Lines file is read as this format when one of its first records that
parse as JSON objects looks like a trajectory (a `schema` naming `cowork.trajectory`, or a
`trajectory_id` with `messages`), or when none of them is an object with keys (lines that do not parse,
`{}`, bare values: damage that says nothing of another format, so it is quarantined line by line and
counted). JSON Lines of some other kind of object are skipped, saying what their objects hold.
The contract then quarantines each line that is not a valid trajectory, with the reason."""

from __future__ import annotations

from cowork_assets.ingest import recount

NAME = "cowork"
PRIORITY = 90
RECORDS = recount.LINES


def looks_native(obj) -> bool:
    if not isinstance(obj, dict):
        return False
    schema = obj.get("schema")
    return (isinstance(schema, str) and schema.startswith("cowork.trajectory")) or (
        "trajectory_id" in obj and "messages" in obj
    )


def detect(sample) -> bool:
    """Reads only up to the first trajectory-like record: a native file's first line, as a rule."""
    if not sample.is_lines:
        return False
    keyed = False  # an object with keys seen, none of them a trajectory's
    for obj in sample.first_values():
        if looks_native(obj):
            return True
        keyed = keyed or (isinstance(obj, dict) and bool(obj))
    return not keyed


def records(sample, batch):
    return sample.lines()
