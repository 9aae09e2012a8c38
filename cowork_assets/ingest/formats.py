"""What each file of a batch folder is, and how to stream its records.

* `*.jsonl`, `*.jsonl.gz`: one record per line, `cowork.trajectory/v1` or OpenAI chat
  (`{"messages", "tools"}`), detected from the file's first record;
* `*.json`: tau-bench results (one record per run), an ATIF trajectory (one record), or tool
  definitions (`tools_<domain>.json`, used by the results of that domain); a `.json` that does not
  parse is one quarantined record; any other `.json` is ignored with a reason;
* anything else is ignored with a reason (listed in the run's metadata).

A batch folder may hold a `.cowork-format` file naming the format of its JSON Lines files
(`cowork` or `openai_chat`), which overrides detection.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from cowork_assets.ingest.adapters import atif, openai_chat, tau_bench
from cowork_assets.ingest.raw_files import RawLine, batch_files, iter_raw_lines



@dataclass
class BatchSources:
    files: list[Path] = field(default_factory=list)  # record sources, in read order
    ignored: list[str] = field(default_factory=list)
    tools: dict[str, list[dict]] = field(default_factory=dict)  # domain -> tool definitions
    lines_format: str | None = None  # forced format of the JSON Lines files, from .cowork-format
    _json: dict[Path, object] = field(default_factory=dict)

    def records(self, path: Path) -> Iterator[RawLine]:
        if not path.name.endswith(".json"):
            yield from self._lines(path)
            return
        data = self._json[path]
        if isinstance(data, Exception):
            yield RawLine(1, path.read_bytes()[:2000], f"bad_json: {data}")
            return
        if atif.looks_like(data):
            try:
                yield RawLine(1, orjson.dumps(atif.convert(data, path.stem)))
            except (KeyError, TypeError, AttributeError) as exc:
                yield RawLine(1, path.read_bytes()[:2000], f"bad_atif_record: missing or malformed {exc}")
            return
        domain = tau_bench.domain_of(path)
        yield from tau_bench.iter_records(path, data, self.tools.get(domain, self.tools.get("tools")))


    def _lines(self, path: Path) -> Iterator[RawLine]:
        fmt = self.lines_format
        lines = iter_raw_lines(path)
        if fmt is None:  # detect from the first non-blank record
            first = []
            for line in lines:
                first.append(line)
                if line.error or line.data.strip():
                    break
            fmt = "cowork"
            if first and first[-1].error is None:
                try:
                    fmt = "openai_chat" if openai_chat.looks_like(orjson.loads(first[-1].data)) else "cowork"
                except orjson.JSONDecodeError:
                    pass
            lines = (line for part in (first, lines) for line in part)
        if fmt == "cowork":
            yield from lines
            return
        for line in lines:
            if line.error is not None or not line.data.strip():
                yield line
                continue
            data, error = openai_chat.convert_line(line.data, path.name.split(".")[0], line.record)
            yield RawLine(line.record, data, error)


FORMATS = ("cowork", "openai_chat")


def scan_batch(raw_root: Path, batch: str) -> BatchSources:
    candidates, ignored = batch_files(raw_root, batch)
    sources = BatchSources(ignored=ignored)
    override = raw_root / batch / ".cowork-format"
    if override.is_file():
        sources.lines_format = override.read_text().strip()
        if sources.lines_format not in FORMATS:
            raise ValueError(f"{override}: unknown format {sources.lines_format!r}; use one of {FORMATS}")
    for path in candidates:
        if not path.name.endswith(".json"):
            sources.files.append(path)
            continue
        try:
            data = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as exc:
            sources.files.append(path)
            sources._json[path] = exc
            continue
        if tau_bench.is_results(data) or atif.looks_like(data):
            sources.files.append(path)
            sources._json[path] = data
        elif tau_bench.is_tools(data):
            name = path.stem.lower()
            sources.tools[name.removeprefix("tools_") if name.startswith("tools_") else "tools"] = (
                tau_bench.tool_definitions(data))
        else:
            sources.ignored.append(f"{path.name}: JSON that is neither tau-bench results nor tool definitions")
    return sources



