"""Expected summaries of the conformance corpus, read from each file by the tool's own schema — never by the readers
under test (this module imports nothing of the project: the standard library only).

    python -m tests.conformance.summarize            # print what each file holds
    python -m tests.conformance.summarize --write    # (re)write <format>/expected.json after adding files

A summary says, per raw file: `records` (raw records: lines, samples, simulations, or 1 for a one-run file),
`trajectories` (the runs it holds, a run cut by context compactions counting once per segment), `calls` (tool
calls of the main conversation of each run, the harness's own lines left out), `answered` (those the file
answers with a result), `request` (the first request of the first run, its first 60 characters) and `grades`
(trajectories passed / failed / ungraded, by the grader's own record: a report, a score; a run's segments share
its grade). Each reading below is the
simplest one the tool's format allows, on purpose: where it and a reader disagree, one of them misreads the tool.
"""

from __future__ import annotations

import json
import re
import sys
import zipfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXPECTED = "expected.json"
NOT_RUNS = ("LICENSE", "SOURCES", "README", EXPECTED)
HARNESS_TEXT = re.compile(
    r"\s*(<command-|<local-command-|<bash-|<task-notification>|<system-reminder>|<environment_context>|"
    r"<user_instructions>|# AGENTS\.md|\[Request interrupted|Caveat:|This session is being continued|"
    # Codex's other contextual user fragments (codex-rs core/src/context/*.rs: each its START_MARKER)
    r"<turn_aborted>|<user_shell_command>|<recommended_plugins>|<plugins_instructions>|<skills_instructions>|"
    r"<apps_instructions>|<app-context>|<skill>|<extension_context>|<hook_context>|<subagent_notification>)",
    re.IGNORECASE,
)
SHELL_BLOCK = re.compile(r"```(bash|sh|shell|mswea_bash_command)?[ \t]*\n")


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text") or ""
            for p in content
            if isinstance(p, dict) and p.get("type", "text") in ("text", "input_text", "output_text")
        )
    return ""


def _summary(records, runs, calls, answered, request, grades) -> dict:
    return {
        "records": records,
        "trajectories": runs,
        "calls": calls,
        "answered": answered,
        "request": (request or "")[:60],
        "grades": dict(sorted(Counter(grades).items())),
    }


def _grade(passed) -> str:
    return "ungraded" if passed is None else "passed" if passed else "failed"


def _reports(folder: Path) -> dict[str, bool]:
    """instance id -> resolved, from every SWE-bench report in the folder (run reports and per-instance ones)."""
    out = {}
    for path in folder.rglob("*.json"):
        try:
            doc = json.loads(path.read_text())
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("resolved_ids"), list):
            out |= {
                i: False
                for key, ids in doc.items()
                if key.endswith("_ids") and key not in ("submitted_ids", "completed_ids")
                for i in ids
            }
            out |= {i: True for i in doc["resolved_ids"]}
        elif isinstance(doc, dict) and doc and all(isinstance(v, dict) and "resolved" in v for v in doc.values()):
            out |= {k: v["resolved"] for k, v in doc.items()}
    return out


# --- Claude Code: entries {type, uuid, parentUuid, isSidechain, sessionId, message}; a /compact is a
# compact_boundary system entry; a sub-agent's transcript is all sidechain entries.
def claude_code(path: Path, folder: Path) -> dict:
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    talk = [e for e in entries if e.get("type") in ("user", "assistant") and isinstance(e.get("message"), dict)]
    calls, results, requests = set(), set(), []
    for e in talk:
        content = e["message"].get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        for b in blocks:
            if b.get("type") == "tool_use":
                calls.add(b["id"])
            elif b.get("type") == "tool_result":
                results.add(b.get("tool_use_id"))
        text = _text(blocks)
        if e["type"] == "user" and text.strip() and not HARNESS_TEXT.match(text) and not e.get("isMeta"):
            requests.append(text)
    sub_agents = {e.get("agentId") for e in talk if e.get("isSidechain") and e["type"] == "assistant"}
    main = any(not e.get("isSidechain") and e["type"] == "assistant" for e in talk)
    compactions = sum(e.get("subtype") == "compact_boundary" for e in entries)
    runs = main * (1 + compactions) + len(sub_agents)
    return _summary(1, runs, len(calls), len(calls & results), requests[0] if requests else "", ["ungraded"] * runs)


# --- Codex: {timestamp, type, payload} lines (or the 2025 bare header and bare items); a model response's
# function_call / custom_tool_call / local_shell_call items are its calls, *_output items their results.
def codex(path: Path, folder: Path) -> dict:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    items = [x["payload"] for x in lines if x.get("type") == "response_item"] or [x for x in lines[1:] if x.get("type")]
    calls = {i["call_id"] for i in items if i.get("type") in ("function_call", "custom_tool_call", "local_shell_call")}
    outputs = {i.get("call_id") for i in items if str(i.get("type")).endswith("_output")}
    users = [_text(i.get("content")) for i in items if i.get("type") == "message" and i.get("role") == "user"]
    users += [
        x["payload"].get("message", "")
        for x in lines
        if x.get("type") == "event_msg" and x["payload"].get("type") == "user_message"
    ]
    requests = [u for u in users if u.strip() and not HARNESS_TEXT.match(u)]
    runs = 1 + sum(x.get("type") == "compacted" for x in lines)
    return _summary(1, runs, len(calls), len(calls & outputs), requests[0] if requests else "", ["ungraded"] * runs)


# --- mini-swe-agent: {messages, info, instance_id} (or a bare message list); calls are tool_calls, or in the
# text protocol one shell block per assistant turn, answered by the user turn after it.
def mini_swe_agent(path: Path, folder: Path) -> dict:
    doc = json.loads(path.read_text())
    messages = doc if isinstance(doc, list) else doc["messages"]
    instance = doc.get("instance_id") if isinstance(doc, dict) else None
    instance = instance or path.name.removesuffix(".json").removesuffix(".traj")
    if any(m.get("tool_calls") for m in messages):
        calls = {c["id"] for m in messages for c in m.get("tool_calls") or []}
        answered = calls & {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
        n_calls, n_answered = len(calls), len(answered)
    else:
        acts = [
            i
            for i, m in enumerate(messages)
            if m["role"] == "assistant" and len(SHELL_BLOCK.findall(_text(m.get("content")))) == 1
        ]
        n_calls = len(acts)
        n_answered = sum(i + 1 < len(messages) and messages[i + 1]["role"] == "user" for i in acts)
    request = next(_text(m.get("content")) for m in messages if m["role"] == "user")
    return _summary(1, 1, n_calls, n_answered, request, [_grade(_reports(folder).get(instance))])


# --- SWE-agent: {history, trajectory, info}; an assistant entry's tool_calls or text `action` is its call, the
# next tool (or, in 0.x, user) entry its result; `is_demo` entries are the harness's in-context example.
def swe_agent(path: Path, folder: Path) -> dict:
    history = [m for m in json.loads(path.read_text())["history"] if str(m.get("is_demo")).lower() != "true"]
    calls = answered = 0
    for i, m in enumerate(history):
        if m["role"] == "assistant" and (m.get("tool_calls") or m.get("action")):
            calls += len(m.get("tool_calls") or [None])
            answered += i + 1 < len(history) and history[i + 1]["role"] in ("tool", "user")
    request = next(_text(m.get("content")) for m in history if m["role"] == "user")
    instance = path.name.removesuffix(".traj")
    return _summary(1, 1, calls, answered, request, [_grade(_reports(folder).get(instance))])


# --- OpenHands: a bare list of V0 events, or output.jsonl lines {instance_id, history, test_result}; an agent
# action with tool_call_metadata (or any action but a message, in older runs) is a call; an observation whose
# `cause` (or tool_call_id) names it answers it.
def _openhands_run(history: list) -> tuple[int, int, str]:
    if any(isinstance(e, dict) and "kind" in e for e in history[:3]):  # V1 typed events
        calls = {e.get("tool_call_id") for e in history if e.get("kind") == "ActionEvent"}
        results = {e.get("tool_call_id") for e in history if e.get("kind") == "ObservationEvent"}
        users = [e for e in history if e.get("kind") == "MessageEvent" and e.get("source") == "user"]
        return (
            len(calls),
            len(calls & results),
            _text((users[0].get("llm_message") or {}).get("content")) if users else "",
        )
    bookkeeping = ("message", "system", "recall", "change_agent_state", "null", "condensation")
    actions = [
        e
        for e in history
        if isinstance(e, dict)
        and e.get("source") == "agent"
        and e.get("action")
        and (e["action"] not in bookkeeping + ("finish",) or (e.get("tool_call_metadata") or {}).get("tool_call_id"))
    ]
    causes = {str(e.get("cause")) for e in history if isinstance(e, dict) and "observation" in e}
    answered = sum(str(a.get("id")) in causes for a in actions)
    users = [e for e in history if isinstance(e, dict) and e.get("source") == "user" and e.get("action") == "message"]
    return (
        len(actions),
        answered,
        (users[0].get("args") or {}).get("content") or users[0].get("message") if users else "",
    )


def openhands(path: Path, folder: Path) -> dict:
    if path.suffix == ".jsonl":
        runs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    else:
        runs = [{"history": json.loads(path.read_text())}]
    calls = answered = 0
    requests, grades = [], []
    reports = _reports(folder)
    for run in runs:
        c, a, request = _openhands_run(run["history"])
        calls, answered = calls + c, answered + a
        requests.append(request or _text(run.get("instruction")))
        result = run.get("test_result") or {}
        final = result.get("final_score") if isinstance(result, dict) else None
        resolved = reports.get(
            run.get("instance_id"),
            (result.get("report") or result).get("resolved") if isinstance(result, dict) else None,
        )
        if resolved is None and isinstance(final, dict) and final.get("total"):
            resolved = final.get("result") == final["total"]
        grades.append(_grade(resolved if isinstance(resolved, bool) else None))
    return _summary(len(runs), len(runs), calls, answered, requests[0], grades)


# --- OpenHands V1 events, one a line (the software-agent-sdk's typed events): the file is a run; each ActionEvent
# is a call, answered by an ObservationEvent with its tool_call_id; the request is the user's first MessageEvent.
def openhands_events(path: Path, folder: Path) -> dict:
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    calls = [e["tool_call_id"] for e in events if e["kind"] == "ActionEvent"]
    results = {e.get("tool_call_id") for e in events if e["kind"] == "ObservationEvent"}
    users = [e for e in events if e["kind"] == "MessageEvent" and e.get("source") == "user"]
    request = _text(users[0]["llm_message"].get("content")) if users else ""
    return _summary(1, 1, len(calls), sum(c in results for c in calls), request, ["ungraded"])


# --- Inspect AI: a JSON log {eval, samples} or a .eval zip (header.json, samples/*.json); a sample's assistant
# tool_calls are its calls, tool messages their results; a scorer's value C/I (or 1/0) its grade.
def inspect_ai(path: Path, folder: Path) -> dict:
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            samples = [json.loads(z.read(n)) for n in z.namelist() if n.startswith("samples/") and n.endswith(".json")]
    else:
        samples = json.loads(path.read_text())["samples"] or []
    calls = answered = 0
    grades = []
    for s in samples:
        ids = {c["id"] for m in s["messages"] for c in m.get("tool_calls") or []}
        calls += len(ids)
        answered += len(ids & {m.get("tool_call_id") for m in s["messages"] if m["role"] == "tool"})
        values = [v.get("value") for v in (s.get("scores") or {}).values()]
        grades.append(
            "ungraded"
            if not values
            else "passed"
            if all(v in ("C", 1, 1.0, True) for v in values)
            else "failed"
            if all(v in ("C", "I", 0, 1, 0.0, 1.0, True, False) for v in values)
            else "ungraded"
        )
    first = samples[0]["messages"] if samples else []
    request = next((_text(m.get("content")) for m in first if m["role"] == "user"), "")
    return _summary(len(samples), len(samples), calls, answered, request, grades)


# --- Harbor ATIF: {schema_version, steps}; an agent step's tool_calls are its calls, observation results naming
# them (source_call_id, or the step's only call) their results.
def atif(path: Path, folder: Path) -> dict:
    steps = json.loads(path.read_text())["steps"]
    calls = answered = 0
    for s in steps:
        ids = [c["tool_call_id"] for c in s.get("tool_calls") or []]
        results = (s.get("observation") or {}).get("results") or []
        named = {r.get("source_call_id") or (ids[0] if len(ids) == 1 else None) for r in results}
        calls, answered = calls + len(ids), answered + len(set(ids) & named)
    request = next(_text(s.get("message")) for s in steps if s.get("source") == "user")
    return _summary(1, 1, calls, answered, request, ["ungraded"])


# --- tau2-bench: {info, tasks, simulations} or a bare list of simulations; the agent's calls (requestor
# assistant) and the tool messages answering them (by id); reward 1 passes. The request is the task's: its user
# scenario's instructions (the reason for the call first); a leaderboard file has no tasks: the user's first words.
def tau2(path: Path, folder: Path) -> dict:
    doc = json.loads(path.read_text())
    sims = doc if isinstance(doc, list) else doc["simulations"]
    tasks = {t["id"]: t for t in doc.get("tasks") or []} if isinstance(doc, dict) else {}
    calls = answered = 0
    grades = []
    for sim in sims:
        ids = {c["id"] for m in sim["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []}
        calls += len(ids)
        answered += len(ids & {m.get("id") for m in sim["messages"] if m["role"] == "tool"})
        reward = (sim.get("reward_info") or {}).get("reward")
        grades.append("ungraded" if reward is None else "passed" if reward == 1 else "failed")
    first = next((m["content"] for m in sims[0]["messages"] if m["role"] == "user" and m.get("content")), "")
    scenario = (tasks.get(sims[0]["task_id"]) or {}).get("user_scenario") or {}
    instructions = scenario.get("instructions")
    if isinstance(instructions, dict):
        first = instructions.get("reason_for_call") or first
    elif isinstance(instructions, str):
        first = instructions
    return _summary(len(sims), len(sims), calls, answered, first, grades)


# --- tau-bench: a list of {task_id, reward, info, traj}; traj is OpenAI chat: assistant tool_calls, tool messages
# answering by tool_call_id; reward 1 passes, a run whose reward_info is null errored (ungraded); the request is
# the task's instruction to the simulated user.
def tau_bench(path: Path, folder: Path) -> dict:
    runs = json.loads(path.read_text())
    calls = answered = 0
    grades = []
    for run in runs:
        waiting = Counter()  # call id -> calls made with it and not answered yet (some runs reuse ids)
        for m in run["traj"]:
            for c in m.get("tool_calls") or [] if m["role"] == "assistant" else []:
                calls, waiting[c["id"]] = calls + 1, waiting[c["id"]] + 1
            if m["role"] == "tool" and waiting[m.get("tool_call_id")] > 0:
                answered, waiting[m["tool_call_id"]] = answered + 1, waiting[m["tool_call_id"]] - 1
        info = run.get("info") or {}
        grades.append("ungraded" if info.get("reward_info") is None else "passed" if run["reward"] == 1 else "failed")
    return _summary(len(runs), len(runs), calls, answered, runs[0]["info"]["task"]["instruction"], grades)


# --- ShareGPT (FastChat, LLaMA-Factory): records are a JSON list (or JSON Lines, or a list under `data`) of
# {conversations: [{from, value}]}; a `function_call` turn's value is one {name, arguments} or a list of them, and the
# `observation` turn after it answers them (a list of as many results answers each, else the first); no grades.
def sharegpt(path: Path, folder: Path) -> dict:
    text = path.read_text()
    doc = (
        [json.loads(line) for line in text.splitlines() if line.strip()]
        if path.suffix == ".jsonl"
        else json.loads(text)
    )
    runs = doc["data"] if isinstance(doc, dict) else doc
    calls = answered = 0
    for run in runs:
        turns = run["conversations"]
        for turn, after in zip(turns, turns[1:] + [{}]):
            if turn["from"] == "function_call":
                made = json.loads(turn["value"])
                calls += len(made) if isinstance(made, list) else 1
                if after.get("from") in ("observation", "tool", "function"):
                    results = json.loads(after["value"]) if isinstance(made, list) and len(made) > 1 else None
                    answered += len(made) if isinstance(results, list) and len(results) == len(made) else 1
    first = next(t["value"] for t in runs[0]["conversations"] if t["from"] in ("human", "user"))
    return _summary(len(runs), len(runs), calls, answered, first, ["ungraded"] * len(runs))


# --- LLaMA-Factory v1: JSON Lines of {messages: [{role, content: [{type, value}]}], tools}; `tool_call` blocks are an
# assistant's calls, and each `tool` message answers the calls still waiting (all of them when its text is a JSON
# list of one result per call, else the next one); no grades.
def llamafactory(path: Path, folder: Path) -> dict:
    runs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    calls = answered = 0
    for run in runs:
        waiting = 0
        for m in run["messages"]:
            text = "".join(b["value"] for b in m["content"] if b["type"] == "text")
            if m["role"] == "tool" and waiting:
                try:
                    whole = waiting > 1 and isinstance(json.loads(text), list) and len(json.loads(text)) == waiting
                except ValueError:
                    whole = False
                done = waiting if whole else 1
                answered, waiting = answered + done, waiting - done
            elif m["role"] != "tool":
                waiting = sum(b["type"] == "tool_call" for b in m["content"])
                calls += waiting
    first = next(
        "".join(b["value"] for b in m["content"] if b["type"] == "text")
        for m in runs[0]["messages"]
        if m["role"] == "user"
    )
    return _summary(len(runs), len(runs), calls, answered, first, ["ungraded"] * len(runs))


# --- aider: `.aider.chat.history.md`, sessions after `# aider chat started at`; the user's input `#### ` lines, aider's
# own output `> ` lines ending in two spaces, the model's reply the text in between (aider/io.py). A session is a run
# when the model replied; a reply that edits files (a SEARCH/REPLACE block or a diff) or whose shell commands aider
# offered to run ("Run shell command?") is the run's call, answered when aider's output follows it.
def aider(path: Path, folder: Path) -> dict:
    sessions = re.split(r"(?m)^# aider chat started at .*\n", path.read_text())[1:]
    runs = calls = answered = 0
    requests = []
    for session in sessions:
        lines, kinds, fenced, until = session.split("\n"), [], False, -1
        for i, line in enumerate(lines):
            previous = kinds[-1] if kinds else None
            if i <= until:
                kind = "aider"
            elif previous == "reply" and fenced:
                kind, fenced = "reply", not line.lstrip().startswith("```")
            elif line.startswith("#### "):
                kind = "user"
            elif line.startswith(">") and (until := _aider_until(lines, i)) >= i:
                kind = "aider"
            else:
                kind, fenced = "reply", line.lstrip().startswith("```")
            kinds.append(kind)
        turns = []  # (kind, text) of consecutive lines of a kind
        for kind, line in zip(kinds, lines, strict=True):
            if turns and turns[-1][0] == kind:
                turns[-1][1].append(line)
            else:
                turns.append((kind, [line]))
        turns = [(k, "\n".join(ls)) for k, ls in turns if "".join(ls).strip()]
        turns = [t for i, t in enumerate(turns) if not (t[0] == "aider" and i and turns[i - 1][0] == "aider")]
        replies = [i for i, (kind, _) in enumerate(turns) if kind == "reply"]
        if not replies:
            continue
        runs += 1
        for i in replies:
            after = turns[i + 1][1] if i + 1 < len(turns) and turns[i + 1][0] == "aider" else ""
            if (
                re.search(r"(?m)^(<{5,9} SEARCH|--- \S|\+\+\+ \S|@@ )", turns[i][1])
                or "Applied edit to" in after
                or ("Run shell command" in after and "```" in turns[i][1])
            ):
                calls, answered = calls + 1, answered + bool(after)
        asks = [t.replace("#### ", "").strip() for kind, t in turns if kind == "user"]
        asks = [re.sub(r"^/(ask|code|architect|context) ", "", a) for a in asks]
        requests.append(next((a for a in asks if a and not a.startswith(("/", "!", "<blank>"))), ""))
    return _summary(1, runs, calls, answered, requests[0] if requests else "", ["ungraded"] * runs)


def _aider_until(lines: list[str], i: int) -> int:
    """The last line of aider's message a `>` line starts (its line ending in two spaces), or -1: a quote."""
    for j in range(i, len(lines)):
        if j > i and lines[j].startswith(("#### ", "> ")):
            return -1
        if lines[j].endswith("  ") or lines[j] == ">":
            return j
    return -1


READERS = {
    f.__name__: f
    for f in (
        aider,
        claude_code,
        codex,
        mini_swe_agent,
        swe_agent,
        openhands,
        openhands_events,
        inspect_ai,
        atif,
        tau2,
        tau_bench,
        sharegpt,
        llamafactory,
    )
}
RUN_FILES = {
    "aider": (".aider.chat.history.md",),
    "claude_code": ("*.jsonl",),
    "codex": ("*.jsonl", "*.json"),
    "mini_swe_agent": ("*.json",),
    "swe_agent": ("*.traj",),
    "openhands": ("*.jsonl", "*.json"),
    "openhands_events": ("*.jsonl",),
    "inspect_ai": ("*.json", "*.eval"),
    "atif": ("*.trajectory.json",),
    "tau2": ("*.json",),
    "tau_bench": ("*.json",),
    "sharegpt": ("*.json", "*.jsonl"),
    "llamafactory": ("*.jsonl",),
}


def run_files(fmt: str) -> list[Path]:
    folder = HERE / fmt
    found = {p for pattern in RUN_FILES[fmt] for p in folder.rglob(pattern)}
    return sorted(p for p in found if not p.name.startswith(NOT_RUNS + ("tools_",)) and p.name != "report.json")


def summaries(fmt: str) -> dict[str, dict]:
    """raw_file (relative to the corpus, as ingest names it) -> its summary, for every run file of a format."""
    return {p.relative_to(HERE).as_posix(): READERS[fmt](p, HERE / fmt) for p in run_files(fmt)}


def main(argv: list[str]) -> None:
    for fmt in READERS:
        found = summaries(fmt)
        if "--write" in argv:
            (HERE / fmt / EXPECTED).write_text(json.dumps(found, indent=1, ensure_ascii=False) + "\n")
        for name, summary in found.items():
            print(name, json.dumps(summary, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1:])
