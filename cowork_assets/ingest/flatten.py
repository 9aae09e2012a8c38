"""A chunk of validated raw lines -> the staging tables, as columnar polars work.

DuckDB parses the chunk's JSON in one call (free-form objects such as tool-call arguments and the
task package arrive as compact JSON strings, which is exactly the normalisation we want), then
polars explodes messages and tool calls and aggregates per trajectory. Python touches only one value
per distinct task package (its canonical hash).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import tempfile
from collections.abc import Sequence
from functools import lru_cache

import duckdb
import orjson
import polars as pl
import pyarrow as pa

from cowork_assets.ingest.contract import Trajectory, columnar_schema
from cowork_assets.ingest.schemas import Messages, ToolCalls, Trajectories
from cowork_assets.runtime import scratch
from cowork_assets.store.models import TOOL_CALL, message_chars, polars_schema
from cowork_assets.store.text_key import KEY, TextMemo, keyed, text_key

# The contract's columns as DuckDB reads a line: the task as its JSON text (hashed whole into task_packages).
RAW_SCHEMA = columnar_schema(Trajectory, as_text=frozenset({"task"}))


def _duckdb_type(dtype: pl.DataType) -> str:
    if isinstance(dtype, pl.Struct):
        return "STRUCT(" + ", ".join(f'"{f.name}" {_duckdb_type(f.dtype)}' for f in dtype.fields) + ")"
    if isinstance(dtype, pl.List):
        return _duckdb_type(dtype.inner) + "[]"
    return {pl.String: "VARCHAR", pl.Float64: "DOUBLE", pl.Boolean: "BOOLEAN"}[dtype]


RAW_COLUMNS = {name: _duckdb_type(dtype) for name, dtype in RAW_SCHEMA.items()}
_IOV_MAX = os.sysconf("SC_IOV_MAX")  # buffers per writev call


@lru_cache(maxsize=1)
def _duckdb() -> duckdb.DuckDBPyConnection:
    # One thread: a chunk is small, and DuckDB's parallel JSON reader breaks a line longer than a
    # thread's share of the file (a 50 MB observation) in two. Strings leave as Arrow string views, the
    # layout polars keeps them in: no offsets for DuckDB to build and polars to convert.
    return duckdb.connect(config={"threads": 1, "produce_arrow_string_view": True})


def read_lines(lines: Sequence[bytes]) -> pl.DataFrame:
    """Parse validated JSON lines (UTF-8 bytes, as read) into one frame with RAW_SCHEMA; raises duckdb.Error
    if any line does not parse. A JSON object where RAW_SCHEMA has a string arrives as compact JSON text.

    DuckDB parses JSON twice as fast as polars' read_ndjson, and faster from a file than from memory."""
    longest = max(map(len, lines), default=0)
    with tempfile.NamedTemporaryFile(suffix=".jsonl", dir=scratch.folder()) as fh:
        _write_lines(fh.fileno(), lines)
        relation = (
            _duckdb()
            .cursor()
            .read_json(
                fh.name, columns=RAW_COLUMNS, format="newline_delimited", maximum_object_size=max(longest + 1, 1 << 24)
            )
        )
        return pl.from_arrow(relation.to_arrow_table(), schema=RAW_SCHEMA)


def _write_lines(fd: int, lines: Sequence[bytes]) -> None:
    """Write each line and a newline with os.writev: joining a chunk first costs a copy and, in
    fresh pages, a page fault per page."""
    parts = [part for line in lines for part in (line, b"\n")]
    for start in range(0, len(parts), _IOV_MAX):
        batch = parts[start : start + _IOV_MAX]
        written = os.writev(fd, batch)
        if written < sum(map(len, batch)):  # a short write (rare): the rest one write at a time
            rest = memoryview(b"".join(batch))[written:]
            while rest:
                rest = rest[os.write(fd, rest) :]


def parse_error(exc: duckdb.Error) -> str:
    """DuckDB's reason a line does not parse, without the scratch file's name and the line number within it."""
    return re.sub(r",? (at byte \d+ )?in line \d+", "", re.sub(r' in file "[^"]*"', "", str(exc).splitlines()[0]))


def task_hash(task: dict) -> str:
    """Content hash of a (parsed) task package, independent of key order."""
    return hashlib.sha256(orjson.dumps(task, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


PACKAGE_SCHEMA = {
    "task_hash": pl.String,
    "task_id": pl.String,
    "category": pl.String,
    "request": pl.String,
    "initial_state": pl.String,
    "tools": pl.String,
    "checks": pl.String,
    "n_tools": pl.Int32,
    "n_checks": pl.Int32,
    "check_types": pl.List(pl.String),
}


def _parse_packages(task_jsons: Sequence[str]) -> pl.DataFrame:
    """One row per task JSON: its hash and its parts (free-form parts as JSON strings)."""
    scalars = {name: dtype for name, dtype in PACKAGE_SCHEMA.items() if name != "check_types"}
    columns: dict[str, list] = {name: [] for name in scalars}
    check_types: list[str] = []  # every package's, one after another: a list per row is built element by element
    for text in task_jsons:
        task = orjson.loads(text)
        tools, checks = task.get("tools") or [], task.get("checks") or []
        row = (
            task_hash(task),
            task["task_id"],
            task["category"],
            task["request"],
            orjson.dumps(task.get("initial_state") or {}).decode(),
            orjson.dumps(tools).decode(),
            orjson.dumps(checks).decode(),
            len(tools),
            len(checks),
        )
        for column, value in zip(columns.values(), row):
            column.append(value)
        check_types += [c["type"] for c in checks]
    offsets = pa.array(list(itertools.accumulate(columns["n_checks"], initial=0)), pa.int32())
    lists = pa.ListArray.from_arrays(offsets, pa.array(check_types, pa.string()))
    return pl.DataFrame(columns, schema=scalars).with_columns(
        check_types=pl.Series(lists, dtype=PACKAGE_SCHEMA["check_types"])
    )


class TaskPackages:
    """The task packages of a batch's chunks. The runs of a task repeat its JSON text, and about a fifth of
    a chunk's texts already came in an earlier chunk: each distinct text is parsed once, and found again by
    its key (`text_key.py`)."""

    def __init__(self):
        self._memo = TextMemo({"task_hash": pl.String, "task_id": pl.String, "category": pl.String})

    def __call__(self, tasks: pl.Series) -> tuple[pl.DataFrame, pl.DataFrame]:
        """(every distinct text's key with its task_hash, task_id and category; the packages of the texts not
        seen before, in order of first appearance)."""
        texts = keyed(tasks.unique(maintain_order=True), "task")
        fresh = self._memo.unknown(texts)
        packages = _parse_packages(fresh["task"].to_list())
        self._memo.learn(fresh, packages.select("task_hash", "task_id", "category"))
        return self._memo.look_up(texts), packages


def _messages(raw: pl.DataFrame, batch: str) -> pl.DataFrame:
    call = pl.element()
    msgs = (
        raw.select(
            "trajectory_id",
            "messages",
            message_index=pl.int_ranges(pl.col("messages").list.len(), dtype=pl.Int32),
        )
        .explode(["messages", "message_index"])
        .unnest("messages")
        .with_columns(
            tool_calls=pl.col("tool_calls")
            .list.eval(
                pl.struct(
                    id=call.struct.field("id"),
                    type=call.struct.field("type").fill_null("function"),
                    name=call.struct.field("function").struct.field("name"),
                    arguments=call.struct.field("function").struct.field("arguments"),
                )
            )
            .fill_null(pl.lit([], dtype=pl.List(TOOL_CALL)))
        )
    )
    return msgs.with_columns(
        batch=pl.lit(batch),
        chars=message_chars(pl.col("content"), pl.col("tool_calls"), pl.col("reasoning_content")),
    ).select(polars_schema(Messages).names())


def _tool_calls(messages: pl.DataFrame) -> pl.DataFrame:
    calls = (
        messages.filter(pl.col("tool_calls").list.len() > 0)
        .select(
            "batch",
            "trajectory_id",
            "message_index",
            "tool_calls",
            call_index=pl.int_ranges(pl.col("tool_calls").list.len(), dtype=pl.Int32),
        )
        .explode(["tool_calls", "call_index"])
        .unnest("tool_calls")
        .rename({"id": "call_id", "name": "tool_name"})
    )
    # The first tool message answering a call id; a "result" before its call does not count.
    observations = (
        messages.filter(pl.col("role") == "tool", pl.col("tool_call_id").is_not_null())
        .group_by("trajectory_id", "tool_call_id")
        .agg(observation_index=pl.col("message_index").min(), observation=pl.col("content").first())
    )
    joined = calls.join(
        observations,
        left_on=["trajectory_id", "call_id"],
        right_on=["trajectory_id", "tool_call_id"],
        how="left",
        maintain_order="left",
    )
    answered = pl.col("observation_index") > pl.col("message_index")
    return (
        joined.with_columns(
            observation_index=pl.when(answered).then("observation_index"),
            observation=pl.when(answered).then("observation"),
        )
        .with_columns(observation_chars=pl.col("observation").str.len_chars().cast(pl.Int64))
        .select(polars_schema(ToolCalls).names())
    )


def flatten_chunk(
    raw: pl.DataFrame,
    raw_file: Sequence[str],
    raw_record: Sequence[int],
    batch: str,
    packages: TaskPackages | None = None,
) -> dict[str, pl.DataFrame]:
    """Staging frames for one parsed chunk: `task_packages` holds the packages `packages` has not seen in an
    earlier chunk, `task_counts` the runs of each package of the chunk."""
    messages = _messages(raw, batch)
    tool_calls = _tool_calls(messages)
    per_traj = messages.group_by("trajectory_id").agg(
        n_messages=pl.len().cast(pl.Int32),
        n_user_turns=(pl.col("role") == "user").sum().cast(pl.Int32),
        n_tool_calls=pl.col("tool_calls").list.len().sum().cast(pl.Int32),
        chars_total=pl.col("chars").sum(),
        chars_observations=pl.col("chars").filter(pl.col("role") == "tool").sum(),
    )
    keyed, fresh = (packages or TaskPackages())(raw["task"])
    trajectories = (
        raw.with_columns(
            batch=pl.lit(batch),
            raw_file=pl.Series(raw_file, dtype=pl.String),
            raw_record=pl.Series(raw_record, dtype=pl.Int64),
            **text_key("task"),
        )
        .join(keyed, on=KEY, how="left", maintain_order="left")
        .unnest("teacher", "grade", separator="_")
        .join(per_traj, on="trajectory_id", how="left", maintain_order="left")
        .select(polars_schema(Trajectories).names())
    )
    counts = trajectories.group_by("task_hash", maintain_order=True).agg(
        n_trajectories=pl.len().cast(pl.Int32), first_trajectory_id=pl.col("trajectory_id").first()
    )
    fresh = (  # one row per package: the same task may be written with its keys in another order
        fresh.unique("task_hash", keep="first", maintain_order=True)
        .join(counts, on="task_hash", maintain_order="left")
        .with_columns(batch=pl.lit(batch))
    )
    return {
        "trajectories": trajectories,
        "messages": messages,
        "tool_calls": tool_calls,
        "task_packages": fresh,
        "task_counts": counts,
    }
