"""An independent recount of a batch's raw records, for `records_accounted_for`.

It shares no code with ingest (only the standard library), so a bug in ingest's readers cannot hide in the
recount too. What counts as one raw record:
- a JSON Lines file (`*.jsonl`, `*.jsonl.gz`, or any file of a batch whose `.cowork-format`
  names a line format): each line with a non-blank byte, counted on the decompressed bytes; a gzip stream
  that is corrupt or ends early ends in one more record (the unfinished line and the damage); except that a
  session transcript (its first line an entry with a `sessionId` or a `leafUuid`: Claude Code; or a
  `session_meta` entry: a Codex rollout) is one;
- any other file: a JSON list holds one record per element, except that a list of chat messages (each
  with a `role`: mini-swe-agent) or of events (each with a `source` and an `action` or `observation`:
  an OpenHands event stream) is one, and tool definitions (function specs) are none; a JSON object
  holds `simulations` records (tau2-bench), `samples` records when it has an `eval` (Inspect AI), none for
  a Harbor trial result (`verifier_result`) or a SWE-bench report (`resolved_ids`; a per-instance
  `{resolved, tests_status}`, keyed by instance id or not), else one;
  a file that does not parse as JSON is one record (quarantined as such).
Files ingest lists in `skipped_inputs` (with their reason) are accounted for there and not recounted.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

BLOCK = 1 << 20
LINE_FORMATS = {"cowork", "openai_chat", "openhands"}  # names a `.cowork-format` file may give


def _decompressed(path: Path) -> Iterator[bytes | None]:
    """The file's bytes, gunzipped (all members) when its name ends in .gz; None last if the stream is damaged."""
    with open(path, "rb") as fh:
        if not path.name.endswith(".gz"):
            while block := fh.read(BLOCK):
                yield block
            return
        stream, started = zlib.decompressobj(wbits=31), False
        while block := fh.read(BLOCK):
            while True:
                try:  # at most BLOCK bytes out at a time: a small bomb inflates a thousandfold
                    out = stream.decompress(block, BLOCK)
                except zlib.error:
                    yield None
                    return
                yield out
                started = True
                if stream.eof:  # the next member starts in what is left
                    block, stream, started = stream.unused_data, zlib.decompressobj(wbits=31), False
                    if not block:
                        break
                elif stream.unconsumed_tail or len(out) == BLOCK:
                    block = stream.unconsumed_tail
                else:
                    break
        if started and not stream.eof:
            yield None


def count_lines(path: Path) -> int:
    """Lines holding a non-blank byte; a damaged gzip stream's tail (with its unfinished line) is one record, and so
    is what a read error leaves unread. Only whether the unfinished line holds a non-blank byte is kept, never the
    line itself."""
    count, pending = 0, False  # pending: the unfinished line has a non-blank byte
    try:
        for block in _decompressed(path):
            if block is None:
                return count + 1
            first, *lines = block.split(b"\n")
            if not lines:
                pending = pending or bool(first.strip())
                continue
            rest = lines.pop()
            count += (pending or bool(first.strip())) + sum(1 for line in lines if line.strip())
            pending = bool(rest.strip())
    except OSError:
        return count + 1
    return count + pending


def _is_transcript(path: Path) -> bool:
    """Whether the file's first line is a session transcript's entry (one trajectory per file)."""
    head = b""
    try:
        for block in _decompressed(path):
            if block is None:
                break
            head += block
            if b"\n" in head or len(head) > BLOCK:
                break
    except OSError:
        return False
    try:
        first = json.loads(head.split(b"\n", 1)[0])
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
    if not isinstance(first, dict) or not isinstance(first.get("type"), str):
        return False
    return "sessionId" in first or "leafUuid" in first or first["type"] == "session_meta"


def _is_function_spec(item: object) -> bool:
    spec = item.get("function", item) if isinstance(item, dict) else None
    return isinstance(spec, dict) and "name" in spec


def count_documents(path: Path, max_bytes: int | None = None) -> int:
    """Records of a JSON document file (see the module's docstring); a file over `max_bytes` is one record,
    never read (ingest quarantines it as too large), and so is one nested past Python's recursion limit."""
    if max_bytes is not None and path.stat().st_size > max_bytes:
        return 1
    try:
        document = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError, RecursionError, OSError):
        return 1
    if isinstance(document, list):
        if document and all(_is_function_spec(item) for item in document):
            return 0
        chat = document and all(isinstance(item, dict) and "role" in item for item in document)
        return 1 if chat or _is_event_stream(document) else len(document)
    if isinstance(document, dict):
        if isinstance(document.get("simulations"), list):
            return len(document["simulations"])
        if isinstance(document.get("eval"), dict) and isinstance(document.get("samples"), list):
            return len(document["samples"])
        return 0 if _is_report(document) or "verifier_result" in document else 1
    return 1


def _is_event_stream(document: list) -> bool:
    return all(isinstance(e, dict) and "source" in e and ("action" in e or "observation" in e) for e in document)


def _is_report(document: dict) -> bool:
    def graded(value: object) -> bool:
        return isinstance(value, dict) and isinstance(value.get("resolved"), bool)

    if "resolved_ids" in document or graded(document) and "tests_status" in document:
        return True
    return bool(document) and all(graded(v) for v in document.values())


def recount(folder: Path, skipped: Iterable[str] = (), max_bytes: int | None = None) -> int:
    """Raw records of a batch folder's files, leaving out the files named in `skipped` (file names)."""
    forced = folder / ".cowork-format"
    lines_everywhere = forced.is_file() and forced.read_text().strip() in LINE_FORMATS
    total = 0
    for path in sorted(folder.iterdir()):
        if path.name == forced.name or path.name in set(skipped) or not path.is_file():
            continue
        jsonl = path.name.endswith((".jsonl", ".jsonl.gz")) or lines_everywhere
        if jsonl and _is_transcript(path):
            total += 1
        else:
            total += count_lines(path) if jsonl else count_documents(path, max_bytes)
    return total
