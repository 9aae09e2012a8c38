"""`cowork.trajectory/v1` JSON Lines (`*.jsonl`, `*.jsonl.gz`), the native format: one trajectory per line.

Detection never guesses: a JSON Lines file is read as this format when one of its first records that
parse as JSON objects looks like a trajectory (a `schema` naming `cowork.trajectory`, or a
`trajectory_id` with `messages`), or when none of them is an object with keys (lines that do not parse,
`{}`, bare values: damage that says nothing of another format, so it is quarantined line by line and
counted). JSON Lines of some other kind of object are skipped, saying what their objects hold.
The contract then quarantines each line that is not a valid trajectory, with the reason."""

from __future__ import annotations

from contextlib import suppress
from itertools import islice

import orjson

NAME = "cowork"
PRIORITY = 90
LOOK_AT = 100  # the first records detection reads


def looks_native(obj) -> bool:
    if not isinstance(obj, dict):
        return False
    schema = obj.get("schema")
    return (isinstance(schema, str) and schema.startswith("cowork.trajectory")) or (
        "trajectory_id" in obj and "messages" in obj
    )


def first_objects(sample) -> list:
    """The JSON values among the file's first LOOK_AT non-blank lines that parse (those before a read error:
    reading the file reports that error as a record of its own)."""
    out = []
    try:
        for line in islice((x for x in sample.lines() if x.error or x.data.strip()), LOOK_AT):
            if line.error is None:
                with suppress(orjson.JSONDecodeError):
                    out.append(orjson.loads(line.data.removeprefix(b"\xef\xbb\xbf")))
    except OSError:
        pass
    return out


def detect(sample) -> bool:
    if not sample.is_lines:
        return False
    objects = [obj for obj in first_objects(sample) if isinstance(obj, dict) and obj]
    return not objects or any(looks_native(obj) for obj in objects)


def records(sample, batch):
    return sample.lines()
