"""Rewards from a transcript: replay a task's checks on a conversation (no Dagster needed).

`score(messages, checks)` replays each check through its type (`cowork_assets/check_types/`) and returns the
reward and the per-check results. A check replay cannot decide (an environment assertion, an LLM judge, a
database whose reference writes are unknown) is reported as undecided and left out of the reward, and so is a
check of weight 0 (informational: tau-bench's and tau2's reference calls where the benchmark grades the end
state, not the calls):

* `passed`: every counted check (decidable, weight > 0) is met (None when the task has none);
* `reward`: the weighted share of counted checks met, with the checks' weights as the RL rollouts use them
  (weight 1 unless the check says otherwise); 0.0 when nothing is counted.

Each call is replayed with whether it succeeded: a call whose result is an error (`checks._base.ERROR_RESULT`)
changed no state. `compute_score` is the same in verl's custom reward signature. verl loads it as
`custom_reward_function.path=pkg://cowork_assets.rewards` (or this file's path) with
`custom_reward_function.name=compute_score`; `ground_truth` is `reward_model.ground_truth` of `rl_tasks`.
No `from __future__ import annotations` here: verl loads a file without registering it in `sys.modules`,
and `dataclasses` then cannot resolve string annotations.
"""

import json
import re
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from cowork_assets import check_types
from cowork_assets.check_types._base import ERROR_RESULT, Call, is_error


@dataclass
class Score:
    reward: float
    passed: bool | None
    checks: list[dict] = field(default_factory=list)  # check_id, type, weight, decidable, met, first_turn


def turns_of(messages: list[dict]) -> check_types.Turns:
    """The assistant turns of an OpenAI-style conversation: (text, [Call(tool name, arguments JSON, ok), ...]),
    each call's `ok` read from the tool message that answers it (by `tool_call_id`)."""
    failed = {
        m.get("tool_call_id")
        for m in messages
        if m.get("role") == "tool" and (m.get("error") is True or is_error(_text(m.get("content"))))
    }
    turns = []
    for m in messages:
        if m.get("role") != "assistant":
            continue
        calls = []
        for c in m.get("tool_calls") or []:
            f = c.get("function", c)
            args = f.get("arguments", f.get("parameters", {}))
            ok = c.get("id") is None or c.get("id") not in failed
            calls.append(Call(str(f.get("name")), args if isinstance(args, str) else json.dumps(args), ok))
        turns.append((m.get("content") if isinstance(m.get("content"), str) else None, calls))
    return turns


def _text(content) -> str | None:
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else None


def score_turns(turns: check_types.Turns, checks: list[dict] | check_types.Plan) -> Score:
    plan = checks if isinstance(checks, check_types.Plan) else check_types.Plan(checks)
    return scored(plan, check_types.first_turns(plan, turns))


def scored(plan: check_types.Plan, first: dict) -> Score:
    """The reward and per-check results of a run, from each check's first satisfying turn (by check id)."""
    rows, weights, met_weights, counted, met_count = [], 0.0, 0.0, 0, 0
    for check_id, name, kind, weight, decidable in plan.described:
        turn = first.get(check_id) if decidable else None
        met = turn is not None if decidable else None
        rows.append(
            {"check_id": name, "type": kind, "weight": weight, "decidable": decidable, "met": met, "first_turn": turn}
        )
        if decidable and weight > 0:
            counted += 1
            met_count += met
            weights += weight
            met_weights += weight * met
    if not counted:
        return Score(0.0, None, rows)
    return Score(met_weights / weights, met_count == counted, rows)


def score(messages: list[dict], checks: list[dict] | str) -> Score:
    """Replay `checks` (a list, or its JSON as in `reward_model.ground_truth`) on an OpenAI-style conversation."""
    if isinstance(checks, str):
        checks = check_types.parse(checks)
    return score_turns(turns_of(messages), checks)


_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
_TOOL_RESPONSE = re.compile(r"<tool_response>(.*?)</tool_response>", re.S)
# Where a turn starts in decoded chat-template text: a template's role header, or (special tokens
# skipped, as verl decodes) the role's name alone on a line.
_ROLE = re.compile(
    r"(?:^|<\|im_start\|>|<\|start_header_id\|>)(system|user|assistant|tool|ipython)"
    r"(?:<\|end_header_id\|>)?[ \t]*\n",
    re.M,
)
_SPECIAL = re.compile(r"<\|[a-z_]+\|>")


def parse_response(text: str) -> check_types.Turns:
    """The assistant turns of a decoded multi-turn response, as verl's rollout hands it to a reward function:
    the text from the first assistant turn on, tool calls in `<tool_call>{"name", "arguments"}</tool_call>`
    blocks (Hermes / Qwen style) or as `{"name", "parameters"}` lines (Llama 3.1 style), tool results in
    `<tool_response>` blocks or `ipython` / `tool` turns, and each later turn after its role's header (a
    template's header, or the role's name alone on a line when special tokens were skipped). Only assistant
    turns count; the results answer the calls before them in order, and say whether each call succeeded."""
    turns, role, start = [], "assistant", 0
    pending: list[tuple[int, int]] = []  # (turn, call) of calls not yet answered, oldest first
    for found in [*_ROLE.finditer(text), None]:
        end = found.start() if found else len(text)
        segment = text[start:end]
        results = [m.group(1) for m in _TOOL_RESPONSE.finditer(segment)]
        if not results and role in ("tool", "ipython"):
            results = [_SPECIAL.sub("", segment).strip()]
        for result in results:
            if pending:
                t, c = pending.pop(0)
                turns[t][1][c] = turns[t][1][c]._replace(ok=not is_error(result.strip()))
        if role == "assistant":
            segment = _TOOL_RESPONSE.sub("", segment)
            blobs = _TOOL_CALL.findall(segment)
            if not blobs:  # Llama style: each call a JSON object on its own line
                blobs = [line for line in _SPECIAL.sub("", segment).splitlines() if line.strip().startswith('{"name"')]
                segment = "\n".join(line for line in segment.splitlines() if line not in blobs)
            calls = []
            for blob in blobs:
                try:
                    call = json.loads(blob)
                except json.JSONDecodeError:
                    continue
                args = call.get("arguments", call.get("parameters", {})) if isinstance(call, dict) else {}
                if isinstance(call, dict) and isinstance(call.get("name"), str):
                    calls.append(Call(call["name"], args if isinstance(args, str) else json.dumps(args)))
            content = _SPECIAL.sub("", _TOOL_CALL.sub("", segment)).strip()
            if content or calls:
                pending += [(len(turns), c) for c in range(len(calls))]
                turns.append((content or None, calls))
        if found:
            role, start = found.group(1), found.end()
    return turns


def compute_score(
    data_source: str, solution_str: str, ground_truth: str | list | dict, extra_info: dict | None = None, **_: Any
) -> float | None:
    """verl's custom reward function: the reward of a rollout against the task's checks. When the trainer
    passes the conversation itself as `extra_info["messages"]`, it is replayed; otherwise the decoded
    response `solution_str` is parsed (`parse_response`). A coding task (`reward_model.style` "sandbox": its
    ground truth an object, not a list of checks) is not decidable from the transcript: None, the reward is
    the sandbox's test run."""
    if isinstance(ground_truth, str):
        ground_truth = json.loads(ground_truth)
    if isinstance(ground_truth, dict):
        return None
    checks = [c for c in ground_truth if isinstance(c, dict)] if isinstance(ground_truth, list) else []
    messages = (extra_info or {}).get("messages")
    if isinstance(messages, list):
        return score(messages, checks).reward
    return score_turns(parse_response(solution_str), checks).reward


def turns_by_trajectory(messages: pl.DataFrame) -> dict[str, check_types.Turns]:
    """trajectory_id -> its assistant turns, read from message rows (one row per call; a call fails when the
    tool message answering it reports an error) as flat columns: polars turns nested structs into Python dicts
    slowly."""
    call = pl.col("call")
    failed = (
        messages.filter(pl.col("role") == "tool", pl.col("content").str.contains(ERROR_RESULT))
        .select(
            pl.col("trajectory_id").cast(pl.String), call_id=pl.col("tool_call_id").cast(pl.String), failed=pl.lit(True)
        )
        .unique(["trajectory_id", "call_id"])
    )
    flat = (
        messages.filter(pl.col("role") == "assistant")
        .sort("trajectory_id", "message_index")
        .select("trajectory_id", "message_index", "content", call="tool_calls")
        .explode("call", empty_as_null=True)
        .select(
            "trajectory_id",
            "message_index",
            "content",
            call.is_not_null().alias("has_call"),
            call.struct.field("name"),
            call.struct.field("arguments"),
            call_id=call.struct.field("id"),
        )
        .join(failed, on=["trajectory_id", "call_id"], how="left", maintain_order="left")
        .drop("call_id")
    )
    out: dict[str, list] = {}
    last = None
    for tid, index, content, has_call, name, arguments, failed_call in flat.iter_rows():
        if (tid, index) != last:
            calls: list[Call] = []
            out.setdefault(tid, []).append((content, calls))
            last = (tid, index)
        if has_call:
            calls.append(Call(name, arguments, not failed_call))
    return out
