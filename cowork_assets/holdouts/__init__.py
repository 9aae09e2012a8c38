"""Benchmark holdout lists: the files naming the tasks a benchmark keeps for testing, read into rows.

A holdout list is a file (or every file of a folder) naming a benchmark's tasks:
* a split file, `{"train": [...], "test": [...]}` (tau2-bench's `split_tasks.json` shape): its `test` tasks are held
  out, its `train` tasks are the training side (they always land in `train`, never in `validation`);
* a list of task or instance ids: a text file with one id per line, a JSON list (of ids, or of objects with an
  `instance_id`, `task_id` or `id`), JSON Lines of such objects (a SWE-bench dataset dump), or a JSON object with
  `ids`: every task named is held out. An object's `problem_statement` (or `text`, `request`, `instruction`) is the
  task's text, for decontamination by text.
Each list names its benchmark and how the benchmark's ids become this pipeline's task ids (its id scheme): in a
JSON object's `benchmark` and `task_id` keys (e.g. `"tau2-{domain}-{id}"`), or in a text file's `# benchmark:` and
`# task_id:` header lines. A split file named `<domain>_split_tasks.json`, or `split_tasks.json` in a `<domain>/`
folder, is tau2-bench's (`tau2-{domain}-{id}`, as the tau2 reader names tasks). Ids are otherwise taken as they
are (SWE-bench instance ids are the coding formats' task ids).

Shipped lists, named by the `holdout` setting like paths: `tau2` (tau2-bench's official airline and retail splits
with each task's text, MIT; `holdouts/tau2/`) and `swebench` (SWE-bench Verified's and Lite's test instance ids, MIT;
`holdouts/swebench/`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import orjson
import polars as pl

HOLDOUTS = Path(__file__).resolve().parent
ID_KEYS = ("instance_id", "task_id", "id")
TEXT_KEYS = ("problem_statement", "text", "request", "instruction")
SPLIT_FILE = "split_tasks.json"
LIST_SUFFIXES = (".json", ".jsonl", ".txt", ".csv", ".tsv", ".lst")
HEADER = re.compile(r"#\s*(benchmark|task_id)\s*:\s*(\S+)")

LISTS_SCHEMA = {
    "benchmark": pl.String,
    "task_id": pl.String,
    "side": pl.String,
    "text": pl.String,
    "source": pl.String,
}


class HoldoutError(ValueError):
    """A holdout list that cannot be read, in words a user can act on."""


@dataclass(frozen=True)
class Scheme:
    benchmark: str
    task_id: str = "{id}"

    def __call__(self, raw_id, domain: str = "") -> str:
        return self.task_id.format(id=str(raw_id).strip(), domain=domain)


def shipped() -> list[str]:
    """The lists shipped beside this module, by name: one folder each."""
    return sorted(p.name for p in HOLDOUTS.iterdir() if p.is_dir() and not p.name.startswith("_"))


def files_of(entries: list[str]) -> list[Path]:
    """The list files the `holdout` setting names: shipped lists by name, files, and the files of folders."""
    out = []
    for entry in entries:
        path = HOLDOUTS / entry if entry in shipped() else Path(entry).expanduser()
        if path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(LIST_SUFFIXES))
        elif path.is_file():
            out.append(path)
        else:
            names = ", ".join(shipped())
            raise HoldoutError(f"holdout {entry!r} is neither a shipped list ({names}) nor a file or folder")
    return out


def load(entries: list[str]) -> pl.DataFrame:
    """benchmark, task_id, side (`test` held out, `train` the training side), text, source: every list entry. Read
    once while the files stay as they were (every batch looks them up)."""
    return _load(state(entries))


def state(entries: list[str]) -> tuple[tuple[Path, int, int], ...]:
    """The list files the entries name, each with its size and time: equal while the lists are unchanged."""
    return tuple((path, *_stamp(path)) for path in files_of(entries))


def _stamp(path: Path) -> tuple[int, int]:
    try:
        found = path.stat()
    except OSError:  # reading it says why
        return (-1, -1)
    return (found.st_size, found.st_mtime_ns)


@lru_cache(maxsize=8)
def _load(files: tuple[tuple[Path, int, int], ...]) -> pl.DataFrame:
    rows = [row for path, *_ in files for row in _rows(path)]
    frame = pl.DataFrame(rows, schema=LISTS_SCHEMA, orient="row")
    return frame.unique(["task_id", "side"], keep="first", maintain_order=True)


def _rows(path: Path) -> list[tuple]:
    try:
        raw = path.read_bytes()
        if path.name.endswith(".jsonl"):
            data = [orjson.loads(line) for line in raw.splitlines() if line.strip()]
        elif path.name.endswith(".json"):
            data = orjson.loads(raw)
        else:
            data = raw.decode()
    except (OSError, ValueError) as exc:
        raise HoldoutError(f"holdout list {path} cannot be read: {exc}") from None
    source = path.name
    if isinstance(data, str):
        return _text_rows(data, path, source)
    if isinstance(data, dict) and isinstance(data.get("test"), list):
        scheme, domain = _split_scheme(data, path)
        return [
            (scheme.benchmark, scheme(_id(item), domain), side, _text(item), source)
            for side in ("test", "train")
            for item in data.get(side) or []
            if _id(item) is not None
        ]
    if isinstance(data, dict) and isinstance(data.get("ids"), list):
        scheme, data = Scheme(str(data.get("benchmark") or path.stem), str(data.get("task_id") or "{id}")), data["ids"]
    else:
        scheme = Scheme(path.stem)
    if not isinstance(data, list):
        raise HoldoutError(
            f"holdout list {path} is neither a split file ({{train, test}}), a list of ids nor an object with `ids`"
        )
    return [(scheme.benchmark, scheme(_id(i)), "test", _text(i), source) for i in data if _id(i) is not None]


def _text_rows(text: str, path: Path, source: str) -> list[tuple]:
    header = dict(HEADER.findall(text))
    scheme = Scheme(header.get("benchmark", path.stem), header.get("task_id", "{id}"))
    ids = [line.split(",")[0].split("\t")[0].strip() for line in text.splitlines()]
    return [(scheme.benchmark, scheme(i), "test", None, source) for i in ids if i and not i.startswith("#")]


def _split_scheme(data: dict, path: Path) -> tuple[Scheme, str]:
    """A split file's benchmark and id scheme: its own keys, else tau2-bench's, its domain from its name."""
    if path.name.endswith(SPLIT_FILE):
        domain = path.name.removesuffix(SPLIT_FILE).rstrip("_") or path.parent.name
        default = Scheme("tau2", "tau2-{domain}-{id}")
    else:
        domain, default = "", Scheme(path.stem)
    return Scheme(str(data.get("benchmark") or default.benchmark), str(data.get("task_id") or default.task_id)), domain


def _id(item) -> str | None:
    if isinstance(item, str | int):
        return str(item)
    if isinstance(item, dict):
        return next((str(item[k]) for k in ID_KEYS if isinstance(item.get(k), str | int)), None)
    return None


def _text(item) -> str | None:
    return next((item[k] for k in TEXT_KEYS if isinstance(item.get(k), str)), None) if isinstance(item, dict) else None
