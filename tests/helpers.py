"""Hand-made trajectories for unit tests, flattened exactly as ingest flattens them."""

from __future__ import annotations

import orjson
import polars as pl

from cowork_assets.ingest import flatten as ingest_flatten


def trajectory(
    messages: list[dict], checks: list[dict] | None = None, tools: list[dict] | None = None, tid: str = "t1", **extra
) -> dict:
    return {
        "schema": "cowork.trajectory/v1",
        "trajectory_id": tid,
        "task": {
            "task_id": "task-1",
            "category": "single_turn",
            "request": "r",
            "checks": checks or [],
            "tools": tools or [],
        },
        "teacher": {"model": "m", "role": "teacher"},
        "group_id": "g",
        "messages": messages,
        "grade": {"score": 1.0, "passed": True, "checks": {}},
        **extra,
    }


def call(name: str, args: dict, call_id: str = "c1", content: str | None = None) -> dict:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": orjson.dumps(args).decode()}}
        ],
    }


def result(content: str, call_id: str = "c1", name: str = "tool") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def flatten(*trajs: dict, batch: str = "b") -> dict[str, pl.DataFrame]:
    raw = ingest_flatten.read_lines([orjson.dumps(t) for t in trajs])
    return ingest_flatten.flatten_chunk(raw, ["f.jsonl"] * len(trajs), list(range(1, len(trajs) + 1)), batch)
