"""tau2-bench simulation results (`*.json`: one object `{timestamp, info, tasks, simulations}`), and
leaderboard submissions: a bare list of simulations, or `{domain, agent, model, ..., simulations}`.

One trajectory per simulation (raw_record = its 1-based position in `simulations`), with the task
package from `tasks[]`:
  * request: the user scenario's instructions (reason for call, known and unknown info, task
    instructions); in solo runs (no simulated user) the ticket, given as the user's message;
  * tools: `info.environment_info.tool_defs`, else `tools_<domain>.json` beside the file, else every
    tool the agent calls in the file (one list per file, so a task has one package);
  * checks from `evaluation_criteria`: assistant `actions` -> `tool_called` with their arguments (only
    the `compare_args` keys when given); `communicate_info` -> `keywords_present`; `env_assertions` ->
    `env_assertion`; `nl_assertions` -> `nl_assertion`. Checks outside `reward_basis` carry weight 0
    (informational). tau2 grades the end state when `DB` or `ENV_ASSERTION` is in the basis: the reference's
    writes become one `db_match` check (`check_types/db_match.py`), `db` (`exact`: the database) or, for the
    environment assertions alone, `state` (`includes`: the writes that make the asserted state). The simulated
    user's own actions are writes too: the agent's in a solo run, where it holds the user's tools; in a run
    with a user they are not in the agent's conversation, so the state check is then not decidable.
  * grade: `reward_info.reward`, with per-check results from its action, communicate, environment,
    database and NL parts; a simulation without `reward_info` is ungraded.
A file without `tasks` (a leaderboard submission) rebuilds each simulation's checks from its own
`reward_info` (its action, communicate, environment and NL checks, the database check, `reward_basis`),
the same check types as above; the request is then the simulated user's first message, the policy the
simulation's `policy`, the domain the file's `domain` (else the part of a `<agent>_<domain>_<model>_<n>trial`
file name that names it).
Only the agent's view makes the conversation: the simulated user's own tool calls (telecom: on its
phone) and their results are left out, and so is the orchestrator's fixed first greeting (an assistant
message before any user message, written by the harness, not the model). Simulations with fewer or
extra keys are read whenever the parts above are there; otherwise each is quarantined `bad_tau2_record`.
"""

from __future__ import annotations

from functools import partial

from cowork_assets.check_types.db_match import DEFAULT_RULES, StateRules, state_check
from cowork_assets.ingest import recount
from cowork_assets.ingest.formats import _common, tool_definitions

NAME = "tau2"
PRIORITY = 25
RECORDS = recount.items("simulations")
BASIS = {
    "ACTION": "tool_called",
    "COMMUNICATE": "keywords_present",
    "ENV_ASSERTION": "env_assertion",
    "DB": "db_match",
    "NL_ASSERTION": "nl_assertion",
}
SCENARIO_PARTS = ("reason_for_call", "known_info", "unknown_info", "task_instructions")


def is_simulation(item) -> bool:
    return isinstance(item, dict) and "task_id" in item and isinstance(item.get("messages"), list)


def detect(sample) -> bool:
    doc = sample.document
    if isinstance(doc, list):  # a leaderboard's bare list of simulations
        return bool(doc) and is_simulation(doc[0])
    return isinstance(doc, dict) and isinstance(doc.get("simulations"), list)


def criteria_from_reward(reward_info) -> dict:
    """A simulation's evaluation criteria as its `reward_info` reports them (a file without `tasks`); its
    reference actions are unknown (None) when it has no action checks."""
    info = _common.mapping(reward_info)
    checked = info.get("action_checks")
    return {
        "actions": None
        if checked is None
        else [a["action"] for a in checked if isinstance(a, dict) and isinstance(a.get("action"), dict)],
        "communicate_info": [c["info"] for c in info.get("communicate_checks") or [] if c.get("info")],
        "env_assertions": [e.get("env_assertion") or e for e in info.get("env_assertions") or []],
        "nl_assertions": [n["nl_assertion"] for n in info.get("nl_assertions") or [] if n.get("nl_assertion")],
        "reward_basis": info.get("reward_basis") or [],
        **({"db": True} if isinstance(info.get("db_check"), dict) else {}),
    }


def _request(task: dict, solo: bool) -> str:
    if solo and task.get("ticket"):
        return task["ticket"]
    instructions = (task.get("user_scenario") or {}).get("instructions")
    if isinstance(instructions, dict):
        return "\n".join(str(instructions[k]) for k in SCENARIO_PARTS if instructions.get(k))
    return str(instructions or task.get("ticket") or "")


def checks(criteria: dict, solo: bool = False, tools: list[dict] = (), rules: StateRules = DEFAULT_RULES) -> list[dict]:
    """The task's evaluation criteria as cowork checks (`solo`: the agent runs without a simulated user)."""
    named = criteria.get("reward_basis") or BASIS
    basis = {BASIS.get(b) for b in named}
    actions = criteria.get("actions")
    out = []
    for i, a in enumerate(actions or []):
        if a.get("requestor", "assistant") != "assistant":
            continue  # the simulated user's own action
        args = a.get("arguments") or {}
        if isinstance(a.get("compare_args"), list):
            args = {k: v for k, v in args.items() if k in a["compare_args"]}
        out.append(
            {"id": str(a.get("action_id") or f"action_{i}"), "type": "tool_called", "tool": a["name"], "args": args}
        )
    out += [
        {"id": f"communicate_{i}", "type": "keywords_present", "keywords": [info], "normalize": "tau_bench"}
        for i, info in enumerate(criteria.get("communicate_info") or [])
    ]
    out += [
        {
            "id": f"env_{i}",
            "type": "env_assertion",
            **{k: e.get(k) for k in ("env_type", "func_name", "arguments", "assert_value")},
        }
        for i, e in enumerate(criteria.get("env_assertions") or [])
    ]
    out += _state(criteria, named, solo, tools, rules)
    out += [
        {"id": f"nl_{i}", "type": "nl_assertion", "assertion": text}
        for i, text in enumerate(criteria.get("nl_assertions") or [])
    ]
    for c in out:
        if c["type"] not in basis:
            c["weight"] = 0.0
    return out


def _state(criteria: dict, basis: list, solo: bool, tools: list[dict], rules: StateRules) -> list[dict]:
    """The end-state check, when the basis grades the end state (see the module docstring)."""
    exact = "DB" in basis or criteria.get("db")
    if not exact and "ENV_ASSERTION" not in basis:
        return []
    actions = criteria.get("actions")
    by_user = any(a.get("requestor", "assistant") != "assistant" for a in actions or [])
    reference = (
        None
        if actions is None or (by_user and not solo)
        else [
            (a["name"], a.get("arguments") or {})
            for a in actions
            if solo or a.get("requestor", "assistant") == "assistant"
        ]
    )
    return [state_check("db" if exact else "state", reference, tools, rules, "exact" if exact else "includes")]


def grade(reward_info: dict | None, task_checks: list[dict]) -> dict | None:
    if not isinstance(reward_info, dict) or reward_info.get("reward") is None:
        return None
    results: dict[str, bool] = {}
    ids = {c["id"] for c in task_checks}
    for a in reward_info.get("action_checks") or []:
        if (aid := str((a.get("action") or {}).get("action_id"))) in ids:
            results[aid] = bool(a.get("action_match"))
    by_info = {c["keywords"][0]: c["id"] for c in task_checks if c["type"] == "keywords_present"}
    for c in reward_info.get("communicate_checks") or []:
        if c.get("info") in by_info:
            results[by_info[c["info"]]] = bool(c.get("met"))
    for i, e in enumerate(reward_info.get("env_assertions") or []):
        if f"env_{i}" in ids:
            results[f"env_{i}"] = bool(e.get("met"))
    if "db" in ids and isinstance(reward_info.get("db_check"), dict):
        results["db"] = bool(reward_info["db_check"].get("db_match"))
    if "state" in ids and isinstance(reward_info.get("env_assertions"), list):
        results["state"] = all(bool(e.get("met")) for e in reward_info["env_assertions"])
    by_text = {c["assertion"]: c["id"] for c in task_checks if c["type"] == "nl_assertion"}
    for n in reward_info.get("nl_assertions") or []:
        if n.get("nl_assertion") in by_text:
            results[by_text[n["nl_assertion"]]] = bool(n.get("met"))
    reward = float(reward_info["reward"])
    return {"score": reward, "passed": reward >= 1.0, "checks": results}


def agent_view(messages: list[dict], policy: str | None, ticket: str | None) -> list[dict]:
    """The conversation as the agent saw it (see the module docstring)."""
    out = [{"role": "system", "content": policy}] if policy else []
    if ticket:
        out.append({"role": "user", "content": ticket})
    names: dict[str, str] = {}
    seen_user = bool(ticket)
    for m in messages:
        role = m["role"]
        if role == "assistant":
            calls = [c for c in m.get("tool_calls") or [] if c.get("requestor", "assistant") == "assistant"]
            if not seen_user and not calls:
                continue  # the orchestrator's fixed greeting
            message = {"role": "assistant", "content": m.get("content")}
            if calls:
                message["tool_calls"] = [_common.call(c["id"], c["name"], c.get("arguments")) for c in calls]
                names |= {c["id"]: c["name"] for c in calls}
            out.append(message)
        elif role == "user":
            seen_user = True
            if _common.text(m.get("content")):
                out.append({"role": "user", "content": _common.text(m["content"])})
        elif role == "tool":
            if m.get("requestor", "assistant") == "assistant":
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": m.get("id"),
                        "name": names.get(m.get("id")),
                        "content": _common.text(m.get("content")) or "",
                    }
                )
        else:
            out.append({"role": role, "content": _common.text(m.get("content"))})
    return out


def _file_tools(doc: dict, env: dict, domain: str, batch) -> list[dict]:
    given = env.get("tool_defs")
    if isinstance(given, dict):
        given = list(given.values())
    if given:
        return _common.tool_definitions(given, batch.notes)
    if (beside := tool_definitions.for_domain(batch, domain)) is not None:
        return _common.tool_definitions(beside, batch.notes)
    names = [
        c.get("name")
        for s in doc["simulations"]
        if isinstance(s, dict)
        for m in _common.listing(s.get("messages"))
        if isinstance(m, dict) and m.get("role") == "assistant"
        for c in _common.listing(m.get("tool_calls"))
        if isinstance(c, dict) and c.get("requestor", "assistant") == "assistant"
    ]
    names += [
        a.get("name")
        for t in _common.listing(doc.get("tasks"))
        if isinstance(t, dict)
        for a in _common.listing(_common.mapping(t.get("evaluation_criteria")).get("actions"))
        if isinstance(a, dict) and a.get("requestor", "assistant") == "assistant"
    ]
    return sorted(_common.called_tools([], names), key=lambda t: t["name"])


def convert(sim: dict, position: int, doc: dict, context: dict) -> dict:
    if not is_simulation(sim):
        raise _common.Malformed(f"simulation {position} has no task_id or no messages list")
    if context["tasks"] is None:  # a leaderboard file: the simulation says what was checked
        task = {"id": str(sim["task_id"]), "evaluation_criteria": criteria_from_reward(sim.get("reward_info"))}
    elif (task := context["tasks"].get(str(sim["task_id"]))) is None:
        raise _common.Malformed(f"simulation {position} is of task {sim['task_id']!r}, not among the file's tasks")
    solo = not any(m.get("role") == "user" for m in sim["messages"])
    task_checks = checks(task.get("evaluation_criteria") or {}, solo, context["tools"], context["rules"])
    domain = context["domain"]
    task_id = f"tau2-{domain}-{task['id']}"
    policy = context["policy"] or (sim.get("policy") if isinstance(sim.get("policy"), str) else None)
    messages = agent_view(sim["messages"], policy, task.get("ticket") if solo else None)
    request = _request(task, solo) or _common.first_user_text(messages)
    return _common.trajectory(
        f"{context['stem']}:{task['id']}:{sim.get('trial', position)}",
        {
            "task_id": task_id,
            "category": f"tau2_{domain}",
            "request": request,
            "initial_state": task.get("initial_state") or {},
            "tools": context["tools"],
            "checks": task_checks,
        },
        context["model"],
        messages,
        grade=grade(sim.get("reward_info"), task_checks),
        run_id=f"trial-{sim.get('trial', 0)}",
    )


def _domain(doc: dict, env: dict, stem: str) -> str:
    if env.get("domain_name") or doc.get("domain"):
        return str(env.get("domain_name") or doc.get("domain")).lower()
    parts = stem.split("_")
    if "tasks" not in doc and len(parts) >= 4 and parts[-1].endswith("trial"):  # <agent>_<domain>_<model>_<n>trial
        return parts[-3].lower()
    return parts[-1].lower()


def records(sample, batch):
    doc = sample.document
    if isinstance(doc, list):
        doc = {"simulations": doc}
    info = _common.mapping(doc.get("info"))  # the file's parts: one of another type reads as absent
    env = _common.mapping(info.get("environment_info"))
    domain = _domain(doc, env, sample.path.stem)
    has_tasks = isinstance(doc.get("tasks"), list)
    context = {
        "stem": sample.path.stem,
        "domain": domain,
        "policy": env.get("policy") if isinstance(env.get("policy"), str) else None,
        "model": str(_common.mapping(info.get("agent_info")).get("llm") or doc.get("model") or "unknown"),
        "tasks": {str(t.get("id")): t for t in doc["tasks"] if isinstance(t, dict)} if has_tasks else None,
        "tools": _file_tools(doc, env, domain, batch),
        "rules": batch.state_rules,
    }
    for i, sim in enumerate(doc["simulations"], 1):
        yield _common.record_line(i, partial(convert, sim, i, doc, context), sim, "bad_tau2_record")
