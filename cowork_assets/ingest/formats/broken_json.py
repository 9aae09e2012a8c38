"""A `*.json` file (or one that starts like JSON) that does not parse: one quarantined `bad_json` record (or
`too_large`, past max_record_bytes: not read), so the loss is counted rather than the file silently skipped."""

from __future__ import annotations

from cowork_assets.ingest import recount
from cowork_assets.ingest.formats._common import EXCERPT_BYTES
from cowork_assets.store.raw_files import RawLine

NAME = "broken_json"
PRIORITY = 95
RECORDS = recount.ONE


def detect(sample) -> bool:
    return (
        not sample.is_lines
        and isinstance(sample.document, Exception)
        and (sample.path.name.endswith(".json") or sample.head.lstrip()[:1] in (b"{", b"["))
    )


def records(sample, batch):
    problem = str(sample.document)
    yield RawLine(
        1, sample.head[:EXCERPT_BYTES], problem if problem.startswith("too_large") else f"bad_json: {problem}"
    )
