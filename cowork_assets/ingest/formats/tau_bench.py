"""tau-bench results (`*.json`: a JSON list of runs `{task_id, trial, reward, info, traj}`).

Each run becomes one record (raw_record = 1-based position in the list):
  * the reference `actions` become `tool_called` checks with their arguments (the grader replays them,
    so their argument values are what it depends on);
  * `outputs` become `keywords_present` checks (tau-bench matches them lower-cased, commas removed);
  * `reward` becomes the grade; per-check results come from `reward_info` when present;
  * tools come from `tools_<domain>.json` (or `tools.json`) beside the results, else from the calls seen.
The domain is the one named at the end of the file name (`...-retail.json`, `...-airline.json`)."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

from cowork_assets.ingest.formats import _common, tool_definitions

NAME = "tau_bench"
PRIORITY = 30
_DOMAIN = re.compile(r"([a-z]+)$")


def is_results(data: Any) -> bool:
    """A list of runs; one recognisable run among the first ten is enough (bad runs are quarantined)."""
    return isinstance(data, list) and any(isinstance(r, dict) and "traj" in r and "info" in r for r in data[:10])


def detect(sample) -> bool:
    return is_results(sample.document)


def domain_of(path: Path) -> str:
    found = _DOMAIN.search(path.stem.lower())
    return found.group(1) if found else "tau"


def convert(run: dict, stem: str, domain: str, tools: list[dict] | None) -> dict:
    """One tau-bench run as a cowork.trajectory/v1 object (KeyError/TypeError on a malformed run)."""
    task = run["info"]["task"]
    actions, outputs = task.get("actions") or [], task.get("outputs") or []
    checks = [
        {"id": f"action_{i}", "type": "tool_called", "tool": a["name"], "args": a.get("kwargs") or {}}
        for i, a in enumerate(actions)
    ]
    checks += [
        {"id": f"output_{i}", "type": "keywords_present", "keywords": [o], "normalize": "tau_bench"}
        for i, o in enumerate(outputs)
    ]
    info = (run["info"].get("reward_info") or {}).get("info") or {}
    results: dict[str, bool] = {}
    if "r_actions" in info:
        results |= {f"action_{i}": info["r_actions"] >= 1.0 for i in range(len(actions))}
    if isinstance(info.get("outputs"), dict):
        results |= {f"output_{i}": bool(info["outputs"].get(o)) for i, o in enumerate(outputs)}
    task_id = f"tau-{domain}-{run['task_id']}"
    messages = run["traj"]
    return _common.trajectory(
        f"{stem}:{run['task_id']}:{run['trial']}",
        {
            "task_id": task_id,
            "category": f"tau_bench_{domain}",
            "request": task["instruction"],
            "initial_state": {"user_id": task.get("user_id")},
            "tools": tools
            if tools is not None
            else _common.called_tools(
                [m for m in messages if isinstance(m, dict)], [a.get("name") for a in actions if isinstance(a, dict)]
            ),
            "checks": checks,
        },
        stem.removesuffix(f"-{domain}"),
        messages,
        grade={"score": float(run["reward"]), "passed": float(run["reward"]) >= 1.0, "checks": results},
        run_id=f"trial-{run['trial']}",
    )


def records(sample, batch):
    stem, domain = sample.path.stem, domain_of(sample.path)
    raw_tools = tool_definitions.for_domain(batch, domain)
    tools = _common.tool_definitions(raw_tools, batch.notes) if raw_tools is not None else None
    for i, run in enumerate(sample.document, 1):
        yield _common.record_line(i, partial(convert, run, stem, domain, tools), run, "bad_tau_record")
