"""tau-bench results files -> `cowork.trajectory/v1`.

A results file is a JSON list of runs `{task_id, trial, reward, info, traj}`. Each run becomes one
record (raw_record = 1-based position in the list):
  * the reference `actions` become `tool_called` checks with their arguments (the grader replays
    them, so their argument values are what it depends on);
  * `outputs` become `keywords_present` checks (tau-bench matches them lower-cased, commas removed);
  * `reward` becomes the grade; per-check results come from `reward_info` when present;
  * tools come from `tools_<domain>.json` (or `tools.json`) beside the results, else from the calls seen.
The domain is the one named in the file name (`...-retail.json`, `...-airline.json`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from cowork_assets.ingest.raw_files import RawLine

_DOMAIN = re.compile(r"(retail|airline|[a-z]+)$")


def is_results(data: Any) -> bool:
    """A list of runs; one recognisable run among the first ten is enough (bad runs are quarantined)."""
    return isinstance(data, list) and any(isinstance(r, dict) and "traj" in r and "info" in r for r in data[:10])


def is_tools(data: Any) -> bool:
    return isinstance(data, list) and bool(data) and all(
        isinstance(t, dict) and isinstance(t.get("function", t), dict) and "name" in t.get("function", t) for t in data)


def domain_of(path: Path) -> str:
    return _DOMAIN.search(path.stem.lower()).group(1) if _DOMAIN.search(path.stem.lower()) else "tau"


def tool_definitions(tools: list[dict]) -> list[dict]:
    """OpenAI function schemas -> the task package's tool list."""
    out = []
    for t in tools:
        f = t.get("function", t)
        out.append({"name": f["name"], "description": f.get("description", ""),
                    "parameters": f.get("parameters", {"type": "object", "properties": {}})})
    return out


def _called_tools(run: dict) -> list[dict]:
    names = [c["function"]["name"] for m in run.get("traj") or [] if isinstance(m, dict)
             for c in m.get("tool_calls") or [] if isinstance(c, dict) and isinstance(c.get("function"), dict)]
    names += [a.get("name") for a in (run.get("info") or {}).get("task", {}).get("actions") or [] if isinstance(a, dict)]
    return [{"name": n, "description": "", "parameters": {"type": "object", "properties": {}}}
            for n in dict.fromkeys(n for n in names if isinstance(n, str))]


def convert(run: dict, stem: str, domain: str, tools: list[dict] | None) -> dict:
    """One tau-bench run as a cowork.trajectory/v1 object (KeyError/TypeError on a malformed run)."""
    task = run["info"]["task"]
    actions, outputs = task.get("actions") or [], task.get("outputs") or []
    checks = [{"id": f"action_{i}", "type": "tool_called", "tool": a["name"], "args": a.get("kwargs") or {}}
              for i, a in enumerate(actions)]
    checks += [{"id": f"output_{i}", "type": "keywords_present", "keywords": [o], "normalize": "tau_bench"}
               for i, o in enumerate(outputs)]
    info = (run["info"].get("reward_info") or {}).get("info") or {}
    results: dict[str, bool] = {}
    if "r_actions" in info:
        results |= {f"action_{i}": info["r_actions"] >= 1.0 for i in range(len(actions))}
    if isinstance(info.get("outputs"), dict):
        results |= {f"output_{i}": bool(info["outputs"].get(o)) for i, o in enumerate(outputs)}
    task_id = f"tau-{domain}-{run['task_id']}"
    return {
        "schema": "cowork.trajectory/v1",
        "trajectory_id": f"{stem}:{run['task_id']}:{run['trial']}",
        "task": {
            "task_id": task_id,
            "category": f"tau_bench_{domain}",
            "request": task["instruction"],
            "initial_state": {"user_id": task.get("user_id")},
            "tools": tools if tools is not None else _called_tools(run),
            "checks": checks,
        },
        "teacher": {"model": stem.removesuffix(f"-{domain}"), "run_id": f"trial-{run['trial']}", "role": "teacher"},
        "group_id": task_id,
        "messages": run["traj"],
        "grade": {"score": float(run["reward"]), "passed": float(run["reward"]) >= 1.0, "checks": results},
    }


def iter_records(path: Path, data: list, tools: list[dict] | None) -> Iterator[RawLine]:
    stem, domain = path.stem, domain_of(path)
    for i, run in enumerate(data, 1):
        try:
            yield RawLine(i, orjson.dumps(convert(run, stem, domain, tools)))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            yield RawLine(i, orjson.dumps(run)[:2000], f"bad_tau_record: missing or malformed {exc}")
