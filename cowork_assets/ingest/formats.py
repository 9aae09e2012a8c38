"""What each file of a batch folder is, and how to stream its records.

* `*.jsonl`, `*.jsonl.gz`: `cowork.trajectory/v1`, one record per line;
* `*.json`: tau-bench results (one record per run) or tool definitions (`tools_<domain>.json`, used
  by the results of that domain); a `.json` that does not parse is one quarantined record; any
  other `.json` is ignored with a reason;
* anything else is ignored with a reason (listed in the run's metadata).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from cowork_assets.ingest.adapters import tau_bench
from cowork_assets.ingest.raw_files import RawLine, batch_files, iter_raw_lines



@dataclass
class BatchSources:
    files: list[Path] = field(default_factory=list)  # record sources, in read order
    ignored: list[str] = field(default_factory=list)
    tools: dict[str, list[dict]] = field(default_factory=dict)  # domain -> tool definitions
    _json: dict[Path, object] = field(default_factory=dict)

    def records(self, path: Path) -> Iterator[RawLine]:
        if not path.name.endswith(".json"):
            yield from iter_raw_lines(path)
            return
        data = self._json[path]
        if isinstance(data, Exception):
            yield RawLine(1, path.read_bytes()[:2000], f"bad_json: {data}")
            return
        domain = tau_bench.domain_of(path)
        yield from tau_bench.iter_records(path, data, self.tools.get(domain, self.tools.get("tools")))


def scan_batch(raw_root: Path, batch: str) -> BatchSources:
    candidates, ignored = batch_files(raw_root, batch)
    sources = BatchSources(ignored=ignored)
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
        if tau_bench.is_results(data):
            sources.files.append(path)
            sources._json[path] = data
        elif tau_bench.is_tools(data):
            name = path.stem.lower()
            sources.tools[name.removeprefix("tools_") if name.startswith("tools_") else "tools"] = (
                tau_bench.tool_definitions(data))
        else:
            sources.ignored.append(f"{path.name}: JSON that is neither tau-bench results nor tool definitions")
    return sources



