"""Inconsistent task packages, and runs whose recorded grade the package cannot justify.

Package-level checks parse each distinct package once. Run-level checks are columnar over tool calls:
calls to tools the package does not expose, and call-counting graders (a `distinct_items` check
recorded as passed although the run created fewer distinct items than expected).
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache

import orjson
import polars as pl

from cowork_assets import check_types
from cowork_assets.check_types._base import ERROR_RESULT
from cowork_assets.sandbox import SANDBOX_KEY, rebuildable
from cowork_assets.tool_lists import named_tools
from cowork_assets.validation.json_schema import schema_problem
from cowork_assets.validation.schemas import TaskFindings
from cowork_assets.values import leaves

NUMBER_WORDS = {
    w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())
}
# A count is a number word or a bare integer — not part of a time, date or amount ("10:30", "2026-12-05").
_COUNT = re.compile(
    r"(?<![\d:./-])\b(\d+|" + "|".join(NUMBER_WORDS) + r")\s+(?:new\s+|more\s+|separate\s+)?([a-z][a-z-]+)", re.I
)
# Ids a check can reference: a prefixed code with at least 3 digits (c_42001, #W6390527), or a long number.
_ID = re.compile(r"^(?:#?[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)*|\d{6,})$")
SCHEMA = {name: pl.String for name in TaskFindings.to_schema().columns}


def _stem(word: str) -> str:
    word = word.lower()
    return word[:-1] if word.endswith("s") else word


def _tool_noun(tool: str) -> str:
    return _stem(tool.split("_")[0])


def requested_counts(request: str) -> dict[str, set[int]]:
    """Counts the request states, by noun stem: 'Add three todos' -> {'todo': {3}}."""
    out: dict[str, set[int]] = {}
    for number, noun in _COUNT.findall(request):
        n = int(number) if number.isdigit() else NUMBER_WORDS[number.lower()]
        out.setdefault(_stem(noun), set()).add(n)
    return out


def exposed(tools_json: str) -> dict[str, str]:
    """Exposed tool name -> endpoint ('' for none, or for one that is not a string)."""
    return {t["name"]: e if isinstance(e := t.get("endpoint"), str) else "" for t in named_tools(tools_json)}


# Verbs that name the same action, so `todos_add` suggests `todos_create` and `expenses_accept` `expenses_approve`.
SYNONYMS = {
    "add": "create",
    "new": "create",
    "insert": "create",
    "make": "create",
    "accept": "approve",
    "confirm": "approve",
    "remove": "delete",
    "del": "delete",
    "cancel": "delete",
    "fetch": "get",
    "read": "get",
    "show": "get",
    "find": "search",
    "lookup": "search",
    "query": "search",
    "email": "mail",
    "emails": "mail",
    "msg": "message",
    "text": "message",
    "events": "event",
}


def _tokens(name: str) -> set[str]:
    return {SYNONYMS.get(t, t) for t in re.split(r"[_/\s.-]+", name.lower()) if t}


def suggest(name: str, tools: dict[str, str]) -> str | None:
    """The exposed tool most likely meant: shared name words (verbs by synonym), then string similarity."""
    if not tools:
        return None
    want = _tokens(name)

    def score(candidate: str) -> tuple[float, float]:
        have = _tokens(candidate)
        return len(want & have) / len(want | have), difflib.SequenceMatcher(None, name, candidate).ratio()

    best = max(sorted(tools), key=score)
    return f"use {best}" + (f" ({tools[best]})" if tools[best] else "")


@lru_cache(maxsize=4096)
def _suggest(name: str, interface: tuple[tuple[str, str], ...]) -> str | None:
    return suggest(name, dict(interface))  # packages share tool lists: the same question recurs


def sandbox_of(state_json: str) -> dict | None:
    """A coding task's sandbox (`initial_state.sandbox`): graded by running its tests, not by checks. Only a
    state that names one is parsed: parsing all 18,534 tasks' states of the 80,000-run bench corpus took 0.55 s."""
    if SANDBOX_KEY not in state_json:
        return None
    try:
        state = orjson.loads(state_json)
    except orjson.JSONDecodeError:
        return None
    box = state.get("sandbox") if isinstance(state, dict) else None
    return box if isinstance(box, dict) else None


def package_findings(
    task_id: str, task_hash: str, request: str, tools_json: str, checks_json: str, state_json: str
) -> list[dict]:
    """Findings about one package alone (no runs needed)."""
    task_checks = check_types.parse(checks_json)
    (names, schema_problems), counts = interface(tools_json), requested_counts(request)
    out = []

    def add(kind, detail, check_id=None, suggestion=None, severity="error"):
        out.append(
            {
                "task_id": task_id,
                "task_hash": task_hash,
                "trajectory_id": None,
                "batch": None,
                "check_id": check_id,
                "kind": kind,
                "severity": severity,
                "detail": detail,
                "suggestion": suggestion,
            }
        )

    for problem in schema_problems:
        add("invalid_tool_schema", problem)
    box = sandbox_of(state_json)
    if box is not None and not rebuildable(box):
        add(
            "no_sandbox",
            "a coding task whose log names no repository or image: no sandbox can rebuild it to grade a rollout",
            severity="warning",
            suggestion="keep the run's repository or image in its log, or leave the task out of RL (it is)",
        )
    if not task_checks and box is None:
        add(
            "no_checks",
            "the task has no grading checks: nothing to verify or reward",
            severity="warning",
            suggestion="add checks, or leave the task out of RL (it is)",
        )
    for check in task_checks:
        cid, kind = str(check.get("id")), check_types.type_of(check)
        if kind is None:
            add(
                "unknown_check_type",
                f"check {cid} has unknown type {check.get('type')!r}; kept, not graded here",
                cid,
                severity="warning",
            )
            continue
        for problem in kind.problems(check):
            add("invalid_check", f"check {cid} ({kind.name}) {problem}", cid, "fix the check; it counts for nothing")
        tool = kind.tool(check)
        if tool is not None and tool not in names:
            add(
                "unexposed_tool_in_check",
                f"check {cid} ({kind.name}) names {tool}, which the tool interface does not expose",
                cid,
                suggest(tool, names),
            )
        expected = kind.count(check)
        if tool is not None and expected is not None:
            asked = counts.get(_tool_noun(tool), set())
            if asked and expected[0] not in asked:
                add(
                    "count_mismatch",
                    f"request asks for {' or '.join(map(str, sorted(asked)))} {_tool_noun(tool)}(s); "
                    f"check {cid} expects {expected[0]}",
                    cid,
                    f"set {expected[1]} to {min(asked)}",
                )
    return out


@lru_cache(maxsize=1024)
def interface(tools_json: str) -> tuple[dict[str, str], tuple[str, ...]]:
    """(exposed tool name -> endpoint, invalid parameter schemas) of a tool list. Cached: thousands of
    packages share a few dozen tool lists. The result is shared: do not modify it."""
    problems = []
    for tool in orjson.loads(tools_json):  # every entry, named or not
        params = tool.get("parameters") if isinstance(tool, dict) else None
        if problem := schema_problem(orjson.dumps(params or {}).decode()):
            problems.append(f"{tool.get('name')}: {problem}")
    return exposed(tools_json), tuple(problems)


def referenced_ids(checks_json: str) -> list[tuple[str, str]]:
    """(check id, id value) for id-like values a check's arguments or expected value name."""
    out = []
    for check in check_types.parse(checks_json):
        for leaf in [*leaves(check.get("args") or {}), *leaves(check.get("value")), *(check.get("evidence") or [])]:
            if isinstance(leaf, str) and _ID.match(leaf) and sum(c.isdigit() for c in leaf) >= 3:
                out.append((str(check.get("id")), leaf))
    return out


def unexposed_calls(calls: pl.DataFrame, tools: pl.DataFrame) -> pl.DataFrame:
    """One finding per (run, tool) called that its package does not expose."""
    called = calls.select("trajectory_id", "batch", "task_id", "task_hash", "tool_name").unique(maintain_order=True)
    missing = called.join(
        tools.select("task_hash", "tool_name"), on=["task_hash", "tool_name"], how="anti", maintain_order="left"
    )
    wanted = missing.select("task_hash", "tool_name").unique()
    interfaces = dict(
        tools.join(wanted, on="task_hash", how="semi")
        .group_by("task_hash")
        .agg(pl.struct("tool_name", "endpoint"))
        .iter_rows()
    )
    suggestions = {
        (task_hash, tool_name): _suggest(
            tool_name, tuple((t["tool_name"], t["endpoint"]) for t in interfaces.get(task_hash, ()))
        )
        for task_hash, tool_name in wanted.iter_rows()
    }
    return missing.select(
        "task_id",
        "task_hash",
        "trajectory_id",
        "batch",
        check_id=pl.lit(None, pl.String),
        kind=pl.lit("unexposed_tool_call"),
        severity=pl.lit("error"),
        detail=pl.format("calls {}, which the tool interface does not expose", "tool_name"),
        suggestion=pl.struct("task_hash", "tool_name").map_elements(
            lambda r: suggestions[(r["task_hash"], r["tool_name"])], return_dtype=pl.String
        ),
    )


def call_counting(calls: pl.DataFrame, specs: pl.DataFrame, grades: pl.DataFrame) -> pl.DataFrame:
    """Runs whose recorded grade passes a distinct_items check only by counting duplicate creations.

    One join per distinct key name (few), not one pass over all calls per check.
    """
    made = calls.filter(
        pl.col("observation").is_not_null(),
        ~pl.col("observation").fill_null("").str.contains(ERROR_RESULT),
    )
    per_run = []
    for key in specs["key"].unique().sort().to_list():
        joined = specs.filter(pl.col("key") == key).join(
            made, left_on=["task_hash", "tool"], right_on=["task_hash", "tool_name"]
        )
        per_run.append(
            joined.with_columns(
                item=pl.col("arguments").str.json_path_match(f"$['{key}']").str.strip_chars().str.to_lowercase()
            )
            .group_by("trajectory_id", "batch", "task_id", "task_hash", "check_id", "tool", "key", "expected")
            .agg(calls=pl.len(), distinct=pl.col("item").n_unique())
        )
    if not per_run:
        return pl.DataFrame(schema=SCHEMA)
    # Only runs with duplicates that reach the expected count need their recorded grade read (few).
    suspects = pl.concat(per_run).filter(pl.col("calls") >= pl.col("expected"), pl.col("distinct") < pl.col("expected"))
    suspects = suspects.join(grades, on=["batch", "trajectory_id"], how="left").filter(
        pl.struct("grade_checks", "check_id").map_elements(
            lambda r: bool((orjson.loads(r["grade_checks"]) if r["grade_checks"] else {}).get(r["check_id"])),
            return_dtype=pl.Boolean,
        )
    )
    return suspects.sort("task_id", "trajectory_id", "check_id").select(
        "task_id",
        "task_hash",
        "trajectory_id",
        "batch",
        "check_id",
        kind=pl.lit("call_counting_grader"),
        severity=pl.lit("error"),
        detail=pl.format(
            "grade passes {} on {} successful {} calls but only {} distinct {} values (expected {})",
            "check_id",
            "calls",
            "tool",
            "distinct",
            "key",
            "expected",
        ),
        suggestion=pl.format("re-grade {}: count distinct {} values, not calls", "check_id", "key"),
    )
