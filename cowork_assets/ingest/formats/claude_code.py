"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`, and a sub-agent's own
transcript, `<session>/subagents/agent-<id>.jsonl`): JSON Lines of entries `{type, uuid, parentUuid, isSidechain,
sessionId, message, ...}`, versions 1.0 to 2.1.

Detection reads the first records, not line 1 alone: a session may open with `summary`, `file-history-snapshot`,
`queue-operation` or hook `progress` entries. A file is one raw record, which gives one trajectory per
conversation it holds:

* the **main conversation**: the chain of entries from the last main (not sidechain) user or assistant entry back
  by `parentUuid`, so branches left behind by an edited or retried turn are not read. The chain passes through
  any entry (hook `progress` entries sit on it in 2.1), crosses a `/compact` by the boundary's
  `logicalParentUuid`, and where a parent is missing (a resumed or hand-made file) goes on from the entry before
  it in the file. Kept beside the chain: the other entries of a model message on it (Claude Code writes one entry
  per content block, and parallel calls branch off each other) and the `tool_result` entries answering its calls
  (they are siblings of the chain, not on it);
* **segments**: a `/compact` (a `system` `compact_boundary` entry, or the summary turn Claude Code marks
  `isCompactSummary`) starts a new context: the model saw the summary, not what came before. Each segment is its
  own trajectory (`<session>`, `<session>#2`, ...) starting with what the model saw, so no turn is dropped and
  none is trained in a context it did not have; all segments share the session's task;
* **sub-agents**: sidechain entries (`isSidechain`, the runs the `Task` tool starts) form runs of their own,
  `<session>:agent-<agentId>`, with `teacher.run_id` `subagent-of:<session>`; a sub-agent's transcript file is one.
  A run whose only request is the `Warmup` prompt Claude Code 2.x sends each sub-agent as it starts, and which calls
  no tool, is the harness's warm-up, not a sample (`is_warmup`): left out, and a file holding nothing else is
  quarantined saying so.

An assistant model message (`message.id`) is one turn: `text` blocks its content, `thinking` blocks its
`reasoning_content`, `tool_use {id, name, input}` blocks its calls. Claude Code's own messages (`<synthetic>`
model: API errors, "No response requested.") are not the model's and are left out. A user entry's `tool_result`
blocks are tool messages, its text the user's message (images left out). Local slash commands (`/model`, `/mcp`:
the `<command-name>` wrapper, its `<local-command-stdout>` and the caveat before them) are the terminal's, not the
conversation, and are left out; interrupts (`[Request interrupted by user]`), task notifications and the compact
summary stay in the conversation, as the model saw them, but never become the request. The task is the first
request's hash; there is no grader: the run is ungraded. Everything left out is counted in the batch notes. A line
that is not JSON quarantines the transcript, saying which.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cowork_assets.ingest import recount
from cowork_assets.ingest.formats import _common

NAME = "claude_code"
PRIORITY = 30
RECORDS = recount.ONE
CODING_CATEGORIES = (NAME,)  # its runs are coding-agent runs
TALK = ("user", "assistant")
SYNTHETIC_MODEL = "<synthetic>"
COMPACT_SUMMARY = "This session is being continued from a previous conversation"
# User text that is the harness's, never a request: slash-command wrappers, their output, interrupts, hooks.
NOT_A_REQUEST = re.compile(
    r"\s*(<command-(name|message|args)>|<local-command-|<bash-(input|stdout|stderr)>|<task-notification>"
    r"|<system-reminder>|<user-prompt-submit-hook>|Caveat: The messages below|\[Request interrupted by user"
    rf"|{COMPACT_SUMMARY})"
)
# Context the harness adds to a user's message: shown to the model, not what the user asked.
CONTEXT_BLOCK = re.compile(r"<(ide_opened_file|ide_selection|system-reminder)>.*?</\1>", re.S)
# A local command's traces: the terminal's bookkeeping, left out of the conversation.
LOCAL_COMMAND = re.compile(r"\s*(<command-(name|message|args)>|<local-command-(stdout|stderr|caveat)>)")


def _is_entry(obj) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("type"), str)


def _is_talk(obj) -> bool:
    return obj.get("type") in TALK and isinstance(obj.get("message"), dict) and "sessionId" in obj and "uuid" in obj


def detect(sample) -> bool:
    """JSON Lines whose first records are typed entries, one of them a user or assistant entry of a session."""
    if not sample.is_lines:
        return False
    for obj in sample.first_values():
        if not _is_entry(obj):
            return False
        if _is_talk(obj):
            return True
    return False


def _blocks(message: dict) -> list[dict]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _text(blocks, kind: str = "text", key: str = "text") -> str:
    if isinstance(blocks, str):
        return blocks
    return "".join(b.get(key) or "" for b in blocks or [] if isinstance(b, dict) and b.get("type") == kind)


def _is_compaction(entry: dict) -> bool:
    if entry.get("type") == "system":
        return entry.get("subtype") == "compact_boundary"
    return entry.get("type") == "user" and bool(entry.get("isCompactSummary"))


@dataclass
class Run:
    """One conversation of a transcript: its entries in file order."""

    key: str  # "" for the main conversation, else the sub-agent's id
    entries: list[dict] = field(default_factory=list)


def _chain(leaf: dict, by_uuid: dict[str, dict], before: dict[str, dict]) -> list[dict]:
    """The entries from `leaf` back to its root: by parentUuid, across a compaction by logicalParentUuid, and past
    a parent this file lacks (a resumed session's copy, a hand-made file) by the entry before it in the file."""
    chain, seen, entry = [], set(), leaf
    while entry is not None and entry["uuid"] not in seen:
        seen.add(entry["uuid"])
        chain.append(entry)
        named = entry.get("parentUuid") or entry.get("logicalParentUuid")
        entry = by_uuid.get(named) or (before.get(entry["uuid"]) if named else None)
    return chain[::-1]


def runs_of(entries: list[dict]) -> list[Run]:
    """The transcript's conversations: the main one, then each sub-agent's (its `agentId`, or in transcripts that
    name none, each tree of sidechain entries by its root)."""
    linked = [e for e in entries if isinstance(e.get("uuid"), str)]
    side = {e["uuid"]: e for e in linked if e.get("isSidechain")}

    def root(e: dict) -> str:
        seen = set()
        while e.get("parentUuid") in side and e["uuid"] not in seen:
            seen.add(e["uuid"])
            e = side[e["parentUuid"]]
        return e["uuid"]

    runs = {"": Run("", [e for e in linked if not e.get("isSidechain")])}
    for e in side.values():
        key = str(e.get("agentId") or root(e)[:8])
        runs.setdefault(key, Run(key)).entries.append(e)
    return list(runs.values())


def conversation(mine: list[dict]) -> list[dict]:
    """The entries of the conversation ending at the run's last user or assistant entry, in file order: its chain,
    the other entries of the model messages on it, and the results of their calls."""
    talk = [e for e in mine if e.get("type") in TALK]
    if not talk:
        return []
    by_uuid = {e["uuid"]: e for e in mine}
    before = {later["uuid"]: earlier for earlier, later in zip(mine, mine[1:])}
    chain = _chain(talk[-1], by_uuid, before)
    kept = {e["uuid"] for e in chain}
    turns = {e["message"].get("id") for e in chain if e.get("type") == "assistant" and e["message"].get("id")}
    kept |= {e["uuid"] for e in talk if e.get("type") == "assistant" and e["message"].get("id") in turns}
    calls = {b.get("id") for e in talk if e["uuid"] in kept for b in _blocks(e["message"]) if b["type"] == "tool_use"}
    answered = set()
    for e in talk:
        results = [b.get("tool_use_id") for b in _blocks(e["message"]) if b["type"] == "tool_result"]
        if e["uuid"] not in kept and results and all(r in calls and r not in answered for r in results):
            kept.add(e["uuid"])
        if e["uuid"] in kept:
            answered.update(results)
    return [e for e in mine if e["uuid"] in kept and (e.get("type") in TALK or _is_compaction(e))]


def segments(chain: list[dict], notes) -> list[list[dict]]:
    """The conversation's messages, one list per context (a compaction starts the next)."""
    out: list[list[dict]] = [[]]
    turn = None  # (model message id, index of its assistant message in the segment)
    for entry in chain:
        if _is_compaction(entry) and any(m["role"] == "assistant" for m in out[-1]):
            out.append([])
            turn = None
        if entry.get("type") == "system":
            continue
        message = entry["message"]
        blocks = _blocks(message)
        if entry["type"] == "assistant":
            if message.get("model") == SYNTHETIC_MODEL:
                notes["claude_code_synthetic_messages_left_out"] += 1
                continue
            text, reasoning = _text(blocks), _text(blocks, "thinking", "thinking")
            calls = [_common.call(b["id"], b["name"], b.get("input")) for b in blocks if b["type"] == "tool_use"]
            if turn is not None and message.get("id") is not None and message.get("id") == turn[0]:
                m = out[-1][turn[1]]
                m["content"] = ((m["content"] or "") + text) or None
                m["reasoning_content"] = "\n\n".join(r for r in (m.get("reasoning_content"), reasoning) if r) or None
                m.setdefault("tool_calls", []).extend(calls)
                if not m["tool_calls"]:
                    del m["tool_calls"]
            else:
                m = {"role": "assistant", "content": text or None, "reasoning_content": reasoning or None}
                out[-1].append({**m, **({"tool_calls": calls} if calls else {})})
                turn = (message.get("id"), len(out[-1]) - 1)
            continue
        for b in blocks:
            if b["type"] == "tool_result":
                content = b.get("content")
                text = content if isinstance(content, str) else _text(content)
                out[-1].append({"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": text})
        text = _text(blocks)
        if text and LOCAL_COMMAND.match(text):
            notes["claude_code_local_command_entries_left_out"] += 1
        elif text:
            out[-1].append({"role": "user", "content": text})
            turn = None
    return [_fold_thinking(seg) for seg in out]


def _fold_thinking(messages: list[dict]) -> list[dict]:
    """Assistant messages of thinking only (a model message whose text came in an entry of another id) give their
    reasoning to the next assistant message."""
    out, reasoning = [], []
    for m in messages:
        if m["role"] == "assistant" and not m["content"] and not m.get("tool_calls"):
            reasoning += [m["reasoning_content"]] if m.get("reasoning_content") else []
            continue
        if m["role"] == "assistant" and reasoning:
            m["reasoning_content"] = "\n\n".join([*reasoning, *filter(None, [m.get("reasoning_content")])])
            reasoning = []
        out.append(m)
    return out


def request(messages: list[dict]) -> str:
    """The first user message that is the user's own (not a command's trace, an interrupt or a summary), without
    the context blocks the harness puts around it (the file open in the IDE, system reminders)."""
    own = (CONTEXT_BLOCK.sub("", m["content"]).strip() for m in messages if m["role"] == "user" and m["content"])
    return next((text for text in own if text and not NOT_A_REQUEST.match(text)), "")


def convert(entries: list[dict], sample, batch) -> list[dict]:
    # The last entry's session: a resumed session's file starts with entries copied from the one it continues.
    session = next((e["sessionId"] for e in entries[::-1] if isinstance(e.get("sessionId"), str)), sample.path.stem)
    out, task, warmups = [], None, 0
    for run in runs_of(entries):
        run.entries = conversation(run.entries)
        parts = [s for s in segments(run.entries, batch.notes) if any(m["role"] == "assistant" for m in s)]
        if not parts:
            if run.entries:
                batch.notes["claude_code_conversations_without_an_assistant_turn_left_out"] += 1
            continue
        first = request([m for s in parts for m in s])
        if is_warmup(first, parts):
            batch.notes["claude_code_warmup_exchanges_left_out"] += 1
            warmups += 1
            continue
        model = next(
            (
                e["message"]["model"]
                for e in run.entries
                if e.get("type") == "assistant" and e["message"].get("model") not in (None, SYNTHETIC_MODEL)
            ),
            "unknown",
        )
        run_task = {
            "task_id": _common.task_id_of(NAME, first),
            "category": NAME,
            "request": first,
            "tools": _common.called_tools([m for s in parts for m in s]),
        }
        if not run.key:
            task = run_task
        base = session if not run.key else f"{session}:agent-{run.key}"
        for i, messages in enumerate(parts, 1):
            out.append(
                _common.trajectory(
                    batch.unique_id(base if i == 1 else f"{base}#{i}", sample),
                    run_task if run.key or task is None else task,
                    str(model),
                    messages,
                    run_id=f"subagent-of:{session}" if run.key else None,
                )
            )
        if len(parts) > 1:
            batch.notes["claude_code_compactions_split_into_segments"] += len(parts) - 1
    if not out and warmups:
        raise _common.Malformed(
            "the transcript holds only the harness's warm-up exchange (its `Warmup` prompt to a sub-agent), not a run"
        )
    if not out:
        raise _common.Malformed("the transcript holds no conversation with an assistant turn")
    return out


WARMUP = "warmup"  # the prompt Claude Code 2.x sends a sub-agent when it starts, before any task


def is_warmup(first: str | None, parts: list[list[dict]]) -> bool:
    """Whether a run is the harness's warm-up exchange, not a sample: its only request is Claude Code's `Warmup`
    prompt and it calls no tool (the sub-agent only answers that it is ready)."""
    calls = any(m.get("tool_calls") for s in parts for m in s)
    return (first or "").strip().lower() == WARMUP and not calls


def records(sample, batch):
    yield from _common.session_records(sample, "bad_claude_code_record", lambda lines: convert(lines, sample, batch))
