"""tau-bench results (`*.json`: a JSON list of runs `{task_id, trial, reward, info, traj}`).

Each run becomes one record (raw_record = 1-based position in the list):
  * tau-bench grades the end state: it replays the reference `actions` on a fresh database and compares its
    hash (`gt_data_hash`) with the run's. So the reference becomes one `db_match` check (`check_types/db_match.py`:
    the reference's writes, compared as state, `exact`; the file's `gt_data_hash` of the task as its
    `expected_state`), and each reference action also a `tool_called` check of weight 0: its argument values
    stay evidence, and a read the agent made another way costs nothing;
  * `outputs` become `keywords_present` checks (tau-bench matches them lower-cased, commas removed);
  * `reward` becomes the grade: `r_actions` is the result of `db`, `outputs` of the keyword checks; where only
    the outputs were recorded (tau-bench then drops `r_actions`), `db` is what the reward implies;
  * tools come from `tools_<domain>.json` (or `tools.json`) beside the results, else from the calls seen.
The domain is the one named at the end of the file name (`...-retail.json`, `...-airline.json`)."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

from cowork_assets.check_types.db_match import state_check
from cowork_assets.ingest import recount
from cowork_assets.ingest.formats import _common, tool_definitions

NAME = "tau_bench"
PRIORITY = 30
RECORDS = recount.ELEMENTS
_DOMAIN = re.compile(r"([a-z]+)$")


def is_results(data: Any) -> bool:
    """A list of runs; one recognisable run among the first ten is enough (bad runs are quarantined)."""
    return isinstance(data, list) and any(isinstance(r, dict) and "traj" in r and "info" in r for r in data[:10])


def detect(sample) -> bool:
    return is_results(sample.document)


def domain_of(path: Path) -> str:
    found = _DOMAIN.search(path.stem.lower())
    return found.group(1) if found else "tau"


def convert(run: dict, stem: str, domain: str, context: dict) -> dict:
    """One tau-bench run as a cowork.trajectory/v1 object (KeyError/TypeError on a malformed run)."""
    task = run["info"]["task"]
    actions, outputs = task.get("actions") or [], task.get("outputs") or []
    messages = run["traj"]
    tools = context["tools"]
    if tools is None:
        tools = _common.called_tools(
            [m for m in messages if isinstance(m, dict)], [a.get("name") for a in actions if isinstance(a, dict)]
        )
    checks = [
        {"id": f"action_{i}", "type": "tool_called", "tool": a["name"], "args": a.get("kwargs") or {}, "weight": 0.0}
        for i, a in enumerate(actions)
    ]
    reference = [(a["name"], a.get("kwargs") or {}) for a in actions]
    checks.append(state_check("db", reference, tools, context["rules"], "exact", context["states"].get(run["task_id"])))
    checks += [
        {"id": f"output_{i}", "type": "keywords_present", "keywords": [o], "normalize": "tau_bench"}
        for i, o in enumerate(outputs)
    ]
    task_id = f"tau-{domain}-{run['task_id']}"
    return _common.trajectory(
        f"{stem}:{run['task_id']}:{run['trial']}",
        {
            "task_id": task_id,
            "category": f"tau_bench_{domain}",
            "request": task["instruction"],
            "initial_state": {"user_id": task.get("user_id")},
            "tools": tools,
            "checks": checks,
        },
        stem.removesuffix(f"-{domain}"),
        messages,
        grade=_grade(run, outputs),
        run_id=f"trial-{run['trial']}",
    )


def _grade(run: dict, outputs: list) -> dict:
    reward = float(run["reward"])
    info = (run["info"].get("reward_info") or {}).get("info") or {}
    results: dict[str, bool] = {}
    if "r_actions" in info:
        results["db"] = info["r_actions"] >= 1.0
    if isinstance(info.get("outputs"), dict):
        results |= {f"output_{i}": bool(info["outputs"].get(o)) for i, o in enumerate(outputs)}
        if reward >= 1.0 or all(results.values()):  # the reward is the database and the outputs together
            results["db"] = reward >= 1.0
    return {"score": reward, "passed": reward >= 1.0, "checks": results}


def ground_truth_states(runs: list) -> dict:
    """tau-bench task id -> the `gt_data_hash` its runs in this file were compared against (first one recorded)."""
    states: dict = {}
    for run in runs:
        info = run.get("info") if isinstance(run, dict) else None
        reward = info.get("reward_info") if isinstance(info, dict) else None
        recorded = reward.get("info") if isinstance(reward, dict) else None
        if isinstance(recorded, dict) and isinstance(recorded.get("gt_data_hash"), str):
            states.setdefault(run.get("task_id"), recorded["gt_data_hash"])
    return states


def records(sample, batch):
    stem, domain = sample.path.stem, domain_of(sample.path)
    raw_tools = tool_definitions.for_domain(batch, domain)
    context = {
        "tools": _common.tool_definitions(raw_tools, batch.notes) if raw_tools is not None else None,
        "rules": batch.state_rules,
        "states": ground_truth_states(sample.document),
    }
    for i, run in enumerate(sample.document, 1):
        yield _common.record_line(i, partial(convert, run, stem, domain, context), run, "bad_tau_record")
