"""Ingest one batch folder into the staging tables, streaming, with every raw record accounted for.

Records are read line by line, validated, and gathered into chunks of `chunk_records` valid lines;
each chunk is flattened and appended to the Parquet files, so memory is bounded by the chunk, not by
the batch. Nothing is visible until every table of the batch has been written completely.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa

from cowork_assets.check_types.db_match import StateRules
from cowork_assets.ingest import flatten, schemas
from cowork_assets.ingest.formats import BatchSources, Sample, scan_batch
from cowork_assets.ingest.record import BOM, excerpt, validate_line
from cowork_assets.store.models import arrow_schema, polars_schema
from cowork_assets.store.raw_files import MAX_RECORD_BYTES, RawLine, not_batches
from cowork_assets.store.registry import TABLES, group
from cowork_assets.store.storage import (
    PARQUET_OPTIONS,
    ArrowScratch,
    ParquetSink,
    atomic_path,
    join,
)

BATCH_TABLES = tuple(group("staging"))
QUARANTINE_PART = 2000  # quarantine rows held before they are written
ROOT_BATCH = "_raw_root"  # the batch column of skipped_inputs rows about the raw root itself
_COUNT_NAMES = ("n_trajectories", "first_trajectory_id")


@dataclass
class IngestReport:
    batch: str
    files: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (raw_file, reason): inputs no format reads
    formats: Counter = field(default_factory=Counter)  # format name -> files read
    notes: Counter = field(default_factory=Counter)  # repairs the formats made while reading
    raw_records: int = 0
    blank_lines: int = 0
    parsed: int = 0
    quarantined: int = 0
    reasons: Counter = field(default_factory=Counter)
    rows: dict[str, int] = field(default_factory=dict)

    @property
    def balanced(self) -> bool:
        return self.raw_records == self.parsed + self.quarantined


def accounted(data_root: str, batch: str) -> tuple[int, int]:
    """(raw records parsed into trajectories, raw records quarantined and not parsed) of a written batch. A record
    may give several trajectories (a session's segments before and after a compaction, its sub-agents' runs), and
    one of them may be quarantined while the others parse: each record is counted once."""
    key = ["raw_file", "raw_record"]
    parsed = TABLES["trajectories"].read(data_root, batch, columns=key).unique()
    quarantined = TABLES["quarantine"].read(data_root, batch, columns=key).unique().join(parsed, on=key, how="anti")
    return parsed.height, quarantined.height


class _Writer:
    """Accumulates a batch's rows and streams them into one ParquetSink per table."""

    def __init__(self, data_root: str, batch: str):
        self.batch = batch
        self.sinks = {
            name: TABLES[name].sink(data_root, batch)
            for name, table in group("staging").items()
            if name != "task_packages"
        }
        # Task packages are written once, when first seen; only their counts stay in memory.
        self.packages_final = TABLES["task_packages"].file(data_root, batch)
        full = arrow_schema(schemas.TaskPackages)
        self.packages_seen = ArrowScratch(  # joined with the counts at the end
            self.packages_final, pa.schema([f for f in full if f.name not in _COUNT_NAMES])
        )
        self.package_counts: dict[str, list] = {}  # task_hash -> [n_trajectories, first_trajectory_id]
        self.packages = flatten.TaskPackages()
        self.texts: list[bytes] = []
        self.origins: list[tuple[str, int]] = []
        self.quarantine: list[dict] = []
        self.seen: dict[str, tuple[str, int]] = {}

    def skip(self, skipped: list[tuple[str, str]]) -> None:
        self.sinks["skipped_inputs"].write(
            pl.DataFrame(
                [(self.batch, f, why) for f, why in skipped], orient="row", schema=polars_schema(schemas.SkippedInputs)
            )
        )

    def add(self, text: bytes, raw_file: str, raw_record: int) -> None:
        self.texts.append(text)
        self.origins.append((raw_file, raw_record))

    def reject(self, raw_file: str, raw_record: int, reason: str, detail: str, data: bytes) -> None:
        if len(self.quarantine) >= QUARANTINE_PART:  # a file of bad lines holds a part of them at a time
            self._write_quarantine()
        self.quarantine.append(
            dict(
                batch=self.batch,
                raw_file=raw_file,
                raw_record=raw_record,
                reason=reason,
                detail=detail,
                excerpt=excerpt(data),
            )
        )

    def _write_quarantine(self) -> None:
        if self.quarantine:
            self.sinks["quarantine"].write(pl.DataFrame(self.quarantine, schema=polars_schema(schemas.Quarantine)))
            self.quarantine = []

    def flush(self) -> int:
        """Write the pending chunk; returns how many of its records were parsed."""
        texts, origins = self.texts, self.origins
        self.texts, self.origins = [], []
        parsed = 0
        if texts:
            raw, origins = self._parse(texts, origins)
            raw, origins = self._drop_repeated_ids(raw, origins)
            if raw.height:
                files, records = zip(*origins)
                frames = flatten.flatten_chunk(raw, files, records, self.batch, self.packages)
                self._count_packages(frames.pop("task_packages"), frames.pop("task_counts"))
                for name, frame in frames.items():
                    self.sinks[name].write(frame)
                parsed = raw.height
        self._write_quarantine()
        return parsed

    def _parse(self, texts: list[bytes], origins: list[tuple[str, int]]):
        try:
            return flatten.read_lines(texts), origins
        except duckdb.Error:
            pass
        # The chunk will not parse as a whole: isolate the records the parser rejects.
        frames, kept = [], []
        for text, origin in zip(texts, origins):
            try:
                frames.append(flatten.read_lines([text]))
                kept.append(origin)
            except duckdb.Error as exc:
                self.reject(*origin, "unreadable_record", flatten.parse_error(exc), text)
        return (pl.concat(frames) if frames else pl.DataFrame(schema=flatten.RAW_SCHEMA)), kept

    def _drop_repeated_ids(self, raw: pl.DataFrame, origins: list[tuple[str, int]]):
        """Keep the first record of each trajectory id in the batch; quarantine later ones."""
        keep = []
        for tid, origin in zip(raw["trajectory_id"].to_list(), origins):
            first = self.seen.setdefault(tid, origin)
            keep.append(first == origin)
            if first != origin:
                self.reject(
                    *origin, "duplicate_trajectory_id", f"{tid} first seen at {first[0]}:{first[1]}", tid.encode()
                )
        if all(keep):
            return raw, origins
        return raw.filter(pl.Series(keep)), [o for o, k in zip(origins, keep) if k]

    def _count_packages(self, packages: pl.DataFrame, counts: pl.DataFrame) -> None:
        fresh = packages.filter(~pl.col("task_hash").is_in(list(self.package_counts)))
        self.packages_seen.write(fresh)
        for task_hash, n, first in counts.iter_rows():
            self.package_counts.setdefault(task_hash, [0, first])[0] += n

    def finish(self) -> dict[str, int]:
        counts = pl.DataFrame(
            [(h, n, first) for h, (n, first) in self.package_counts.items()],
            schema={"task_hash": pl.String, _COUNT_NAMES[0]: pl.Int32, _COUNT_NAMES[1]: pl.String},
            orient="row",
        )
        with atomic_path(self.packages_final) as tmp:
            (
                self.packages_seen.scan()
                .join(counts.lazy(), on="task_hash", how="left", maintain_order="left")
                .select(polars_schema(schemas.TaskPackages).names())
                .sink_parquet(tmp, compression=PARQUET_OPTIONS["compression"])
            )
        self.packages_seen.remove()
        for sink in self.sinks.values():
            sink.commit()
        rows = {name: sink.rows for name, sink in self.sinks.items()}
        return rows | {"task_packages": counts.height}

    def abort(self) -> None:
        for sink in self.sinks.values():
            sink.abort()
        self.packages_seen.remove()


def _readable(sources: BatchSources, sample: Sample) -> Iterator[RawLine]:
    """The lines of a file; a read error (EIO, ...) ends them in one `read_error` record for what was not read, and
    so does a reader that fails on input it did not foresee (`reader_error`, the error named for a bug report):
    the batch and its other files go on."""
    record, reader = 0, sources.format_of(sample).NAME
    try:
        for line in sources.records(sample):
            record = line.record
            yield line
    except OSError as exc:
        yield RawLine(record + 1, b"", f"read_error: the file could not be read past record {record}: {exc.strerror}")
    except Exception as exc:  # one reader's bug is the file's quarantine, never the batch's failure
        error = f"{type(exc).__name__}: {exc}"[:300]
        yield RawLine(record + 1, b"", f"reader_error: the {reader} reader failed past record {record} ({error})")


def ingest_batch(
    raw_root: Path,
    batch: str,
    data_root: str,
    chunk_records: int = 2000,
    progress: Callable[[str], None] = lambda message: None,
    max_record_bytes: int = MAX_RECORD_BYTES,
    state_rules: StateRules | None = None,
) -> IngestReport:
    """Read every raw file of `batch` and write its staging tables atomically. A record (line or JSON document)
    over `max_record_bytes` is quarantined `too_large` without being read whole; `state_rules` say which tools
    of state-graded benchmarks are read-only."""
    report = IngestReport(batch)
    sources = scan_batch(raw_root, batch, max_record_bytes, state_rules)
    report.skipped = sources.skipped
    writer = _Writer(data_root, batch)
    try:
        writer.skip(sources.skipped)
        for sample in sources.files:
            rel, last, reader = sample.rel, None, sources.format_of(sample).NAME
            report.files.append(rel)
            report.formats[reader] += 1
            progress(f"reading {rel} ({reader})")
            for line in _readable(sources, sample):
                data = line.data.removesuffix(b"\r")
                if line.error is None and not data.strip():
                    report.blank_lines += 1
                    continue
                report.raw_records += line.record != last  # the trajectories of one record come together
                last = line.record
                if line.error is not None:
                    reason, _, detail = line.error.partition(": ")
                    writer.reject(rel, line.record, reason, detail or "stream ended mid-member", data)
                    continue
                reason, detail = validate_line(data)
                if reason:
                    writer.reject(rel, line.record, reason, detail, data)
                    continue
                writer.add(data.removeprefix(BOM), rel, line.record)  # valid UTF-8: parsed as read
                if len(writer.texts) >= chunk_records:
                    report.parsed += writer.flush()
                    progress(f"{report.raw_records} records read, {report.parsed} trajectories parsed")
        report.parsed += writer.flush()
        report.notes = sources.batch.notes
        report.rows = writer.finish()
    except BaseException:
        writer.abort()
        raise
    report.parsed, report.quarantined = accounted(data_root, batch)
    report.reasons = Counter(TABLES["quarantine"].read(data_root, batch, columns=["reason"])["reason"].to_list())
    return report


def root_skips_file(data_root: str) -> str:
    """Where the raw root's own skipped entries are kept: beside skipped_inputs' batch partitions, not one."""
    return join(TABLES["skipped_inputs"].folder(data_root), "raw_root.parquet")


def record_root_skips(raw_root: Path, data_root: str) -> int:
    """Write the raw root's entries that are not batches (batch `_raw_root`) beside `skipped_inputs`."""
    rows = [(ROOT_BATCH, name, why) for name, why in not_batches(raw_root)] if raw_root.is_dir() else []
    sink = ParquetSink(root_skips_file(data_root), arrow_schema(schemas.SkippedInputs))
    sink.write(pl.DataFrame(rows, orient="row", schema=polars_schema(schemas.SkippedInputs)))
    sink.commit()
    return len(rows)
