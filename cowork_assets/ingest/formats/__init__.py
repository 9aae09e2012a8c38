"""Input formats: what each file of a batch folder is, and how to stream its raw records.

Every module of this package is a format (`Format`, found by `cowork_assets.plugins`); the package is the
registry, so a new format is one new module here and nothing else. A format module defines:

* `NAME` — how `.cowork-format` and the `skipped_inputs` table name it;
* `PRIORITY` — detection order, lower first (specific formats before the general ones);
* `detect(sample: Sample) -> bool` — whether it reads this file;
* `records(sample: Sample, batch: Batch) -> Iterator[RawLine]` — each raw record as a
  `cowork.trajectory/v1` line, or with the reason it is quarantined;
* optionally `AUXILIARY = True` — it gives context to other files of the batch (tool definitions, a
  SWE-bench report) and has no records of its own;
* optionally `TERMINAL_TOOLS` (tool names) and `TERMINAL_COMMANDS` (prefixes of a shell call's `command`) —
  the harness's own calls that end a run (submit, finish, task complete), for the trajectories it gives the
  category `NAME`: a run may end on one, unanswered or followed by its result.

Detection is per file. A `.cowork-format` file in the batch folder naming a format forces it for every
file that is not auxiliary. A file no format takes is skipped with its reason, never silently.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import orjson
import polars as pl

from cowork_assets import plugins
from cowork_assets.check_types.db_match import StateRules
from cowork_assets.ingest import recount
from cowork_assets.store import raw_databases
from cowork_assets.store.raw_files import MAX_RECORD_BYTES, RawLine, batch_entries, iter_raw_lines, too_large

FORCE_FILE = ".cowork-format"
LINES_SUFFIXES = (".jsonl", ".jsonl.gz")
HEAD_BYTES = 1 << 16
LOOK_AT = 100  # the first records of a JSON Lines file detection may read
BFCL_IDS = ("simple", "multiple", "parallel", "irrelevance", "live_", "multi_turn_", "java", "javascript", "sql")


@dataclass
class Sample:
    """One file of a batch, as detection sees it: its name, first bytes, and parsed content on demand."""

    path: Path
    rel: str  # relative to the raw root: raw_file in every table
    max_record_bytes: int = MAX_RECORD_BYTES  # a longer record (line, or JSON document) is not read
    _first_values: list = field(default_factory=list, repr=False)
    _line_source: Iterator[RawLine] | None = field(default=None, repr=False)

    def lines(self) -> Iterator[RawLine]:
        """The file's lines (`iter_raw_lines`), a line over `max_record_bytes` as one `too_large` record."""
        return iter_raw_lines(self.path, self.max_record_bytes)

    @property
    def is_lines(self) -> bool:
        return self.path.name.endswith(LINES_SUFFIXES)

    @property
    def kind(self) -> str:
        """How the file holds its records: `lines` (JSON Lines), `database` (SQLite) or `document` (one JSON value)."""
        return "lines" if self.is_lines else "database" if raw_databases.is_database(self.head) else "document"

    @cached_property
    def tables(self) -> dict[str, set[str]]:
        """A SQLite database's tables and their columns; {} for any other file, or a database that does not open."""
        if self.kind != "database":
            return {}
        try:
            with raw_databases.open_database(self.path) as db:
                return raw_databases.tables(db)
        except sqlite3.DatabaseError:
            return {}

    def has_tables(self, wanted: dict[str, set[str]]) -> bool:
        """Whether the file is a SQLite database holding these tables, each with at least these columns."""
        return self.kind == "database" and all(cols <= self.tables.get(table, set()) for table, cols in wanted.items())

    @cached_property
    def head(self) -> bytes:
        with open(self.path, "rb") as fh:
            return fh.read(HEAD_BYTES)

    @cached_property
    def document(self) -> Any:
        """The whole file as one JSON value (not for JSON Lines files); the exception if it does not parse."""
        if self.is_lines:
            return ValueError("a JSON Lines file")
        if self.head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] not in (b"{", b"[") and not self.path.name.endswith(".json"):
            return ValueError("not JSON")
        if self.path.stat().st_size > self.max_record_bytes:  # never materialised
            return ValueError(too_large(self.max_record_bytes))
        try:
            return orjson.loads(self.path.read_bytes().removeprefix(b"\xef\xbb\xbf"))
        except orjson.JSONDecodeError as exc:
            return exc

    def first_values(self) -> Iterator[Any]:
        """The first LOOK_AT non-blank lines of a JSON Lines file, parsed (None for a line that is not JSON), read
        only as far as the caller goes: detection looks at a file's first records, not at line 1 alone (a Claude
        Code session opens with a snapshot entry, a Codex rollout of 2025 with a bare header)."""
        if not self.is_lines:
            return
        seen = self._first_values
        for i in itertools.count():
            if i == len(seen):
                if self._line_source is None:  # (again, after `release`: past the lines already read)
                    lines = (x for x in self.lines() if x.error or x.data.strip())
                    self._line_source = itertools.islice(lines, len(seen), None)
                try:  # a read error ends what detection sees; reading the file reports it as a record
                    line = next(self._line_source, None) if i < LOOK_AT else None
                except OSError:
                    line = None
                if line is None:
                    return
                seen.append(_parsed(line))
            yield seen[i]

    def release(self) -> None:
        """Close the file detection read from (a batch may hold thousands of samples); what was read stays."""
        self._line_source = None

    @property
    def first_record(self) -> Any:
        """The first non-blank line of a JSON Lines file, parsed (None if it is not JSON)."""
        return next(self.first_values(), None)

    def first_objects(self, n: int = LOOK_AT) -> list[dict]:
        """The JSON objects among the first `n` records of a JSON Lines file."""
        return [v for v in itertools.islice(self.first_values(), n) if isinstance(v, dict)]


def _parsed(line: RawLine) -> Any:
    if line.error:
        return None
    try:
        return orjson.loads(line.data.removeprefix(b"\xef\xbb\xbf"))
    except orjson.JSONDecodeError:
        return None


@dataclass
class Batch:
    """What the formats of one batch share: its files (for auxiliary lookups), ids taken, notes, and the rules
    of state-graded checks (which tools are read-only: settings a format's `db_match` checks are built with)."""

    samples: dict[str, tuple[Sample, ModuleType]] = field(default_factory=dict)  # raw_file -> (sample, format)
    notes: Counter = field(default_factory=Counter)  # repairs made while reading, e.g. dropped null keywords
    state_rules: StateRules = field(default_factory=StateRules)
    _ids: set[str] = field(default_factory=set)
    _built: dict = field(default_factory=dict)

    def auxiliary(self, name: str) -> list[Sample]:
        """The batch's files of the auxiliary format `name`, in file order."""
        return [s for s, fmt in self.samples.values() if fmt.NAME == name]

    def once(self, key: str, build):
        """`build()`, built once per batch: an index of its auxiliary files that a format looks records up in (a
        look-up per record through every file would take time quadratic in the batch's files)."""
        if key not in self._built:
            self._built[key] = build()
        return self._built[key]

    def unique_id(self, trajectory_id: str, sample: Sample) -> str:
        """The id, or, when another file of the batch already used it, the id made unique with this file's path in
        the batch: a harness writes the same file name in each run's folder (SWE-agent's `<instance>.traj`), and
        two runs of one instance are two runs, not a duplicate."""
        if trajectory_id in self._ids:
            self.notes["ids_made_unique_with_file_name"] += 1
            within = sample.rel.split("/", 1)[-1]
            trajectory_id = next(
                candidate
                for n in itertools.count(1)
                if (candidate := f"{trajectory_id}@{within}" + (f"#{n}" if n > 1 else "")) not in self._ids
            )
        self._ids.add(trajectory_id)
        return trajectory_id


class Format(Protocol):
    NAME: str
    PRIORITY: int
    RECORDS: str | dict[str, str]

    def detect(self, sample: Sample) -> bool: ...

    def records(self, sample: Sample, batch: Batch) -> Iterator[RawLine]: ...


def discover(package: ModuleType | str = __name__) -> list[ModuleType]:
    """The format modules of a package (this one by default), in detection order."""
    return sorted(plugins.discover(package, Format).values(), key=lambda m: (m.PRIORITY, m.NAME))


@cache
def registry() -> dict[str, ModuleType]:
    return {m.NAME: m for m in discover()}


@cache
def coding_categories() -> frozenset[str]:
    """The task categories of coding-agent runs, as the formats declare them (`CODING_CATEGORIES`): their sample
    budget is the `coding` one."""
    return frozenset(c for m in registry().values() for c in getattr(m, "CODING_CATEGORIES", ()))


def terminal_calls() -> pl.DataFrame:
    """category, tool_name, command_prefix (null: any call of the tool) of every format's terminal calls."""
    rows = [(m.NAME, name, None) for m in registry().values() for name in sorted(getattr(m, "TERMINAL_TOOLS", ()))] + [
        (m.NAME, "bash", prefix) for m in registry().values() for prefix in getattr(m, "TERMINAL_COMMANDS", ())
    ]
    return pl.DataFrame(
        rows, schema={"category": pl.String, "tool_name": pl.String, "command_prefix": pl.String}, orient="row"
    )


def detect(sample: Sample, formats: list[ModuleType] | None = None) -> ModuleType | None:
    return next((m for m in formats or registry().values() if _detects(m, sample)), None)


def _detects(module: ModuleType, sample: Sample) -> bool:
    """Whether a format reads `sample`; a format whose detection fails on a shape it did not foresee does not (a bug
    in one format's detection never fails the batch: the file goes to the next format, or is skipped with its
    reason). A read error is not the format's: it propagates, as before."""
    try:
        return bool(module.detect(sample))
    except OSError:
        raise
    except Exception:
        return False


def why_not(sample: Sample) -> str:
    """Why no format reads a file, in words a user can act on."""
    doc = sample.document
    if sample.is_lines:
        return _why_not_lines(sample.first_record)
    if base := raw_databases.sidecar_of(sample.path):
        return f"SQLite's own file beside the database {base.name}: read with it"
    if sample.kind == "database":
        if not sample.tables:
            return "a SQLite database that does not open"
        return f"a SQLite database (tables: {', '.join(sorted(sample.tables)[:8])}) that no format reads"
    if isinstance(doc, list):
        return f"a JSON list of {len(doc)} items that no format reads"
    if isinstance(doc, dict):
        keys = ", ".join(sorted(map(str, doc))[:6])
        return f"a JSON object ({keys}) that no format reads"
    if not isinstance(doc, Exception):
        return f"a JSON {type(doc).__name__}, not records"
    return "not JSON Lines (*.jsonl, *.jsonl.gz) or a JSON document any format reads"


def _why_not_lines(first) -> str:
    if isinstance(first, dict) and "result" in first and str(first.get("id", "")).startswith(BFCL_IDS):
        return (
            "BFCL results ({id, result}): the model's answers without the tool outputs that follow them, "
            "so not a trajectory log"
        )
    if isinstance(first, dict):
        return f"JSON Lines of objects ({', '.join(sorted(map(str, first))[:6])}) that no format reads"
    return "JSON Lines that no format reads"


@dataclass
class BatchSources:
    """The files of one batch a format reads, in read order, and the inputs skipped with their reasons."""

    files: list[Sample] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (raw_file, reason)
    batch: Batch = field(default_factory=Batch)

    def format_of(self, sample: Sample) -> ModuleType:
        return self.batch.samples[sample.rel][1]

    def records(self, sample: Sample) -> Iterator[RawLine]:
        return self.format_of(sample).records(sample, self.batch)


def record_rules(sources: BatchSources) -> list[tuple[Path, str]]:
    """Each file the batch's formats read, with its format's rule for counting its records (`recount`)."""
    return [(s.path, recount.rule_for(sources.format_of(s).RECORDS, s.kind)) for s in sources.files]


def recount_batch(raw_root: Path, batch: str, max_record_bytes: int = MAX_RECORD_BYTES) -> int:
    """The batch's raw records by the independent recount: each file a format reads, by its format's rule (files
    no format reads are accounted for in skipped_inputs)."""
    return recount.recount(record_rules(scan_batch(raw_root, batch, max_record_bytes)), max_record_bytes)


def scan_batch(
    raw_root: Path, batch: str, max_record_bytes: int = MAX_RECORD_BYTES, state_rules: StateRules | None = None
) -> BatchSources:
    """Detect the format of every file of a batch folder; a `.cowork-format` file forces one."""
    entries, skipped = batch_entries(raw_root, batch)
    sources = BatchSources(skipped=skipped, batch=Batch(state_rules=state_rules or StateRules()))
    forced = None
    force_file = raw_root / batch / FORCE_FILE
    if force_file.is_file():
        name = force_file.read_text().strip()
        if name not in registry():
            raise ValueError(f"{force_file}: unknown format {name!r}; use one of {sorted(registry())}")
        forced = registry()[name]
    for path in entries:
        if path == force_file:
            continue
        sample = Sample(path, path.relative_to(raw_root).as_posix(), max_record_bytes)
        try:
            fmt = detect(sample)
        except OSError as exc:  # EIO, a file that vanished: named, not fatal
            sources.skipped.append((sample.rel, f"cannot be read: {exc.strerror or exc}"))
            continue
        finally:
            sample.release()
        if forced is not None and not getattr(fmt, "AUXILIARY", False):
            fmt = forced
        if fmt is None:
            sources.skipped.append((sample.rel, why_not(sample)))
            continue
        sources.batch.samples[sample.rel] = (sample, fmt)
        if not getattr(fmt, "AUXILIARY", False):
            sources.files.append(sample)
    return sources
