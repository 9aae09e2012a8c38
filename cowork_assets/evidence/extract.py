"""Evidence items per trajectory: from the task package's checks, and grounding from tool calls.

Checks are parsed once per distinct task package (few); the per-call work — grounding tokens and
`distinct_items` key values — is columnar over the tool_calls table.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

import orjson
import polars as pl

from cowork_assets import check_types
from cowork_assets.values import IDENTIFIER_PATTERN, grounding_filter, normalise, record_value

FILE_NAME = r"/([A-Za-z0-9_-][A-Za-z0-9_.-]*\.[A-Za-z][A-Za-z0-9]{0,7})$"

ITEM_SCHEMA = {
    "trajectory_id": pl.String,
    "check_id": pl.String,
    "check_type": pl.String,
    "source": pl.String,
    "value": pl.String,
    "norm": pl.String,
}


@lru_cache(maxsize=1024)
def enum_values(tools_json: str) -> frozenset[str]:
    """Every `enum` choice in the tools' parameter schemas, normalised. Cached: thousands of task
    packages share a few dozen tool lists."""
    found: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            choices = node.get("enum")
            for v in choices if isinstance(choices, list) else []:  # JSON Schema's enum is a list; else no choices
                if isinstance(v, (str, int, float)) and not isinstance(v, bool):
                    found.add(normalise(str(v)))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(orjson.loads(tools_json))
    return frozenset(found)


# A batch's chunks share many of their packages (about half of a chunk's come again in another): each is read once.
@lru_cache(maxsize=4096)
def package_items(checks_json: str, tools_json: str) -> tuple[list[dict], list[dict], Counter]:
    """(value items, created-item specs {check_id, tool, key}, unknown check types) of one package; shared by
    the calls for the same package, so not to be changed."""
    enums = enum_values(tools_json)
    items, specs, unknown = [], [], Counter()
    for check in check_types.parse(checks_json):
        kind = check_types.type_of(check)
        if kind is None:
            unknown[str(check.get("type"))] += 1
        for source, value in check_types.evidence_values(check, enums):
            items.append(
                {
                    "check_id": str(check.get("id")),
                    "check_type": str(check.get("type")),
                    "source": source,
                    "value": value,
                    "norm": normalise(value),
                }
            )
        if kind is not None and (created := kind.created(check)):
            specs.append(
                {
                    "check_id": str(check.get("id")),
                    "check_type": kind.name,
                    "tool": created[0],
                    "key": created[1],
                    "enums": enums,
                }
            )
    return items, specs, unknown


def _created_items(trajectories: pl.DataFrame, tool_calls: pl.DataFrame, spec_rows: list[dict]) -> pl.DataFrame:
    """Values each run created with a check's tool (e.g. distinct_items keys; record-like, not enum values)."""
    if not spec_rows:
        return pl.DataFrame(schema=ITEM_SCHEMA)
    enums = {(r["task_hash"], r["check_id"]): r["enums"] for r in spec_rows}
    specs = pl.DataFrame(
        [{k: r[k] for k in ("task_hash", "check_id", "check_type", "tool", "key")} for r in spec_rows]
    ).with_row_index("spec")
    calls = (
        tool_calls.with_row_index("call")
        .join(trajectories.select("trajectory_id", "task_hash"), on="trajectory_id")
        .join(specs, left_on=["task_hash", "tool_name"], right_on=["task_hash", "tool"])
    )
    created = (
        pl.concat(
            [  # one JSON path per distinct key name (there are few), not one pass per check
                group.with_columns(value=pl.col("arguments").str.json_path_match(f"$['{key}']"))
                for (key,), group in calls.group_by("key")
            ]
            or [calls.with_columns(value=pl.lit(None, pl.String))]
        )
        .drop_nulls("value")
        .sort("spec", "call")
    )
    pairs = created.select("task_hash", "check_id", "value").unique()
    kept = pairs.filter(
        pl.Series([record_value(v, enums[(h, c)]) is not None for h, c, v in pairs.iter_rows()], dtype=pl.Boolean)
    )
    kept = kept.with_columns(norm=pl.Series([normalise(v) for v in kept["value"]], dtype=pl.String))
    return (
        created.join(kept, on=["task_hash", "check_id", "value"], maintain_order="left")
        .select("trajectory_id", "check_id", "check_type", source=pl.lit("derived"), value="value", norm="norm")
        .cast(ITEM_SCHEMA)
    )


def extract_items(
    trajectories: pl.DataFrame, packages: pl.DataFrame, tool_calls: pl.DataFrame
) -> tuple[pl.DataFrame, Counter]:
    """All evidence items of the given trajectories, one row per (trajectory, check, value)."""
    rows, spec_rows, unknown = [], [], Counter()
    for task_hash, package_checks, tools in packages.select("task_hash", "checks", "tools").iter_rows():
        items, specs, unk = package_items(package_checks, tools)
        rows += [{"task_hash": task_hash, **i} for i in items]
        spec_rows += [{"task_hash": task_hash, **s} for s in specs]
        unknown += unk
    per_task = pl.DataFrame(
        rows, schema={"task_hash": pl.String, **{k: v for k, v in ITEM_SCHEMA.items() if k != "trajectory_id"}}
    )
    checked = trajectories.select("trajectory_id", "task_hash").join(per_task, on="task_hash").drop("task_hash")
    frames = [checked.select(list(ITEM_SCHEMA)), _created_items(trajectories, tool_calls, spec_rows)]
    tokens = pl.col("arguments").str.extract_all(IDENTIFIER_PATTERN)
    # A file path's name alone is a value too: agents see `fields.py` in a listing and write the whole path.
    names = tokens.list.eval(pl.element().filter(~pl.element().str.starts_with("http")).str.extract(FILE_NAME))
    grounding = (
        tool_calls.select("trajectory_id", value=pl.concat_list(tokens, names.list.drop_nulls()))
        .explode("value")
        .drop_nulls("value")
        .with_columns(pl.col("value").str.strip_chars_end(".:/-_"))
        .filter(grounding_filter(pl.col("value")))
        .with_columns(
            check_id=pl.lit("grounding"),
            check_type=pl.lit("grounding"),
            source=pl.lit("grounding"),
            norm=pl.col("value").str.to_lowercase(),
        )
        .select(list(ITEM_SCHEMA))
    )
    checked_all = pl.concat(frames).unique(["trajectory_id", "check_id", "norm"], keep="first", maintain_order=True)
    grounding = grounding.unique(["trajectory_id", "norm"], keep="first", maintain_order=True).join(
        checked_all.select("trajectory_id", "norm").unique(),
        on=["trajectory_id", "norm"],
        how="anti",
        maintain_order="left",
    )
    return pl.concat([checked_all, grounding]).cast(ITEM_SCHEMA), unknown
