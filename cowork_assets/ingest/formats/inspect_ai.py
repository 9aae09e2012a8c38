"""Inspect AI eval logs, in both of Inspect's log formats: JSON (`{version, status, eval, plan, results, stats,
samples, reductions}`) and the binary `.eval` log, the default since Inspect 0.3.4x: a zip archive of
`header.json` (the same header; `_journal/start.json` while a run is unfinished) and one `samples/<id>_epoch_<n>.json`
per sample.

Each sample (one epoch of one dataset item) is a trajectory: its `messages` as Inspect writes them
(content strings or lists of parts, joined as chat content, images left out, `reasoning` parts the message's
`reasoning_content`; values Inspect moved to the sample's `attachments` (`attachment://<hash>`) put back; an
assistant's `tool_calls [{id, function: name, arguments: object}]`; `tool` messages answering by
`tool_call_id`, an `error` as their text when there is no content). The task is `<eval.task>:<sample id>`,
the model `eval.model`. The grade comes from `scores`, one entry per scorer, each mapped to a score in
[0, 1]: `C` (correct) 1, `I` (incorrect) 0, `P` (partial) 0.5, `N` (no answer) 0; a boolean 1 or 0; a number
in [0, 1] itself; a `{value}` whose value is a dict of such, their mean. The run's score is the scorers'
mean and it passed when that is 1; a value outside these (a number above 1, a text) leaves it ungraded.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from functools import partial

from cowork_assets.ingest import reasoning, recount
from cowork_assets.ingest.formats import _common
from cowork_assets.store.raw_files import RawLine, too_large

NAME = "inspect_ai"
PRIORITY = 20
RECORDS = recount.items("samples")
LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
ATTACHMENT = "attachment://"
ARCHIVE_ERRORS = (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error)


SAMPLES = "samples/"
HEADERS = ("header.json", "_journal/start.json")


def looks_like(doc) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("eval"), dict) and "samples" in doc and "version" in doc


def detect(sample) -> bool:
    if sample.head[:4] == b"PK\x03\x04":
        return any(name in HEADERS for name in _members(sample))
    return looks_like(sample.document)


def _members(sample) -> list[str]:
    try:
        with zipfile.ZipFile(sample.path) as archive:
            return archive.namelist()
    except (zipfile.BadZipFile, OSError):
        return []


def _resolved(value, attachments: dict):
    """`value` with Inspect's `attachment://<hash>` references replaced by what they refer to."""
    if isinstance(value, str) and value.startswith(ATTACHMENT) and value[len(ATTACHMENT) :] in attachments:
        return attachments[value[len(ATTACHMENT) :]]
    if isinstance(value, list):
        return [_resolved(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolved(v, attachments) for k, v in value.items()}
    return value


def score_of(value) -> float | None:
    """One scorer's value as a score in [0, 1] (None: not a value this mapping knows)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        return LETTERS.get(value.strip().upper())
    if isinstance(value, int | float):
        return float(value) if 0 <= value <= 1 else None
    if isinstance(value, dict) and value:
        scores = [score_of(v) for v in value.values()]
        return None if None in scores else sum(scores) / len(scores)
    return None


def grade(scores) -> dict | None:
    if not isinstance(scores, dict) or not scores:
        return None
    each = {name: score_of((s or {}).get("value") if isinstance(s, dict) else s) for name, s in scores.items()}
    if None in each.values():
        return None
    score = sum(each.values()) / len(each)
    return {"score": score, "passed": score == 1.0, "checks": {f"scores.{n}": v == 1.0 for n, v in each.items()}}


def _message(m: dict, i: int) -> dict:
    if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
        raise _common.Malformed(f"message {i} has no role Inspect writes (system, user, assistant, tool)")
    parts = m.get("content")
    if isinstance(parts, list):  # images are not text the model is trained to write; reasoning is kept apart
        parts = [p for p in parts if not isinstance(p, dict) or p.get("type", "text") in ("text", "reasoning")]
    out = {"role": m["role"], "content": _common.text(parts)}
    if m["role"] == "assistant":
        out["content"], out["reasoning_content"] = reasoning.assistant_turn(m, parts)
    if m.get("tool_calls"):
        out["tool_calls"] = [
            _common.call(str(c.get("id")), str(c.get("function")), c.get("arguments")) for c in m["tool_calls"]
        ]
    if m["role"] == "tool":
        error = m.get("error")
        out["tool_call_id"] = m.get("tool_call_id")
        if not out["content"] and isinstance(error, dict):
            out["content"] = str(error.get("message") or "")
        out["content"] = out["content"] or ""
    return out


def convert(log: dict, sample: dict, file, batch) -> dict:
    if not isinstance(sample.get("messages"), list):
        raise _common.Malformed(f"sample {sample.get('id')!r} has no messages list")
    attachments = _common.mapping(sample.get("attachments"))
    messages = [_message(_resolved(m, attachments), i) for i, m in enumerate(sample["messages"])]
    info = log["eval"]
    sample_id = str(sample.get("id"))
    run = f"{info.get('run_id') or file.path.stem}:{sample_id}:{sample.get('epoch', 1)}"
    return _common.trajectory(
        batch.unique_id(run, file),
        {
            "task_id": f"{info.get('task') or 'inspect'}:{sample_id}",
            "category": NAME,
            "request": _common.first_user_text(messages),
            "tools": _common.called_tools(messages),
        },
        str(info.get("model") or "unknown"),
        messages,
        grade=grade(sample.get("scores")),
        run_id=info.get("run_id"),
    )


def records(sample, batch):
    if sample.head[:4] == b"PK\x03\x04":
        yield from _eval_records(sample, batch)
        return
    log = sample.document
    for i, item in enumerate(log.get("samples") or [], 1):
        raw = item if isinstance(item, dict) else {"sample": item}
        yield _common.record_line(i, partial(convert, log, raw, sample, batch), raw, "bad_inspect_sample")


def _eval_records(sample, batch):
    """The samples of a binary `.eval` log, one record each, in the archive's order; a sample (or a header) the
    archive cannot give back quarantines that sample, never the batch."""
    with zipfile.ZipFile(sample.path) as archive:
        names = archive.namelist()
        members = [n for n in names if n.startswith(SAMPLES) and n.endswith(".json")]
        try:
            header = json.loads(archive.read(next(n for n in HEADERS if n in names)))
            log = {**header, "eval": header.get("eval") or {}} if isinstance(header, dict) else None
        except (*ARCHIVE_ERRORS, StopIteration):
            log = None
        for i, name in enumerate(members, 1):
            if log is None:
                yield RawLine(i, name.encode(), "bad_inspect_log: the log's header.json cannot be read")
            elif archive.getinfo(name).file_size > sample.max_record_bytes:
                yield RawLine(i, name.encode(), too_large(sample.max_record_bytes))
            else:
                try:
                    item = json.loads(archive.read(name))
                except ARCHIVE_ERRORS as exc:
                    yield RawLine(i, name.encode(), f"bad_inspect_sample: {name} cannot be read ({exc})")
                    continue
                raw = item if isinstance(item, dict) else {"sample": item}
                yield _common.record_line(i, partial(convert, log, raw, sample, batch), raw, "bad_inspect_sample")
