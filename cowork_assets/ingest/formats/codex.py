"""Codex CLI rollouts (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`), one session per file,
in each layout Codex has written:

* since Codex 0.3x: `{timestamp, type, payload}` lines: `session_meta` (first), `response_item`, `event_msg`,
  `turn_context` (its `model` is the run's), `compacted`; since 0.149 each line also has an `ordinal`, usage has
  `token_usage_record` lines, and each item is written again as an `event_msg` `item_completed` for the desktop
  app (the conversation is read from the response items alone, so each message once);
* mid 2025 (0.1x-0.2x): a bare header `{id, timestamp, instructions, git}`, `{"record_type": "state"}` markers
  and bare response items;
* the TypeScript CLI of April 2025: one JSON document `{session: {id, instructions}, items: [...]}`.

A file is one raw record. Its response items make the conversation: the session's instructions
(`base_instructions`, `instructions`) the system message; `message` items by role (a developer message as
system; `input_text` / `output_text` parts joined); the items of one model response — its `reasoning` (the
readable `summary` and `content` text; encrypted reasoning is not readable), its messages and its
`function_call {name, arguments, call_id}`, `custom_tool_call {name, input, call_id}` and `local_shell_call
{action, call_id}` items — one assistant turn, however many calls; `*_output {call_id, output}` items their results
(an output written as `{"output", "metadata"}` JSON gives its `output`). A user message that is harness context
(`<environment_context>`, AGENTS.md or `<user_instructions>` instructions, the `<recommended_plugins>`, a
`<skill>`: `CONTEXT_MARKERS`) is kept but never the request; an
`<environment_context>`-only one is left out. A request recorded only as an `event_msg` `user_message` becomes the
user's message where it was recorded. `web_search_call` items are left out (their results are not in the rollout),
counted in the batch notes. A `compacted` line (Codex's context compaction) starts a new context: the session is
kept as segments (`<thread>`, `<thread>#2`, ...), the next one opening with its `replacement_history` or the
summary, so no turn is trained in a context the model did not have. A sub-agent's rollout (`source.subagent`)
names its parent thread in `teacher.run_id` (`subagent-of:<thread>`).
The task is the first request's hash; there is no grader: the run is ungraded. A line that is not JSON
quarantines the rollout, saying which.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import orjson

from cowork_assets.ingest import recount
from cowork_assets.ingest.formats import _common

NAME = "codex"
PRIORITY = 30
RECORDS = recount.ONE
CODING_CATEGORIES = (NAME,)  # its runs are coding-agent runs
ENVELOPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
ROLES = {"user": "user", "assistant": "assistant", "developer": "system", "system": "system"}
CALLS = ("function_call", "custom_tool_call", "local_shell_call")
ASSISTANT_SIDE = (*CALLS, "reasoning", "web_search_call")
ENVIRONMENT = "<environment_context>"
# User messages the harness writes, by the opening marker of each of Codex's contextual user fragments (codex-rs
# `core/src/context/`; matched as Codex matches them, ignoring case): instructions, the environment, the plugins,
# skills and apps on offer, a skill's body, extension and hook context, an aborted turn, a `!` shell command, a
# sub-agent's notification.
CONTEXT_MARKERS = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
    "<user_shell_command>",
    "<recommended_plugins>",
    "<plugins_instructions>",
    "<skills_instructions>",
    "<apps_instructions>",
    "<app-context>",
    "<skill>",
    "<extension_context>",
    "<hook_context>",
    "<subagent_notification>",
)
CONTEXT = re.compile(r"\s*(" + "|".join(map(re.escape, CONTEXT_MARKERS)) + ")", re.IGNORECASE)


def _is_header(obj) -> bool:
    """The first line of a rollout: an enveloped `session_meta`, or the bare header of 2025 (id and timestamp)."""
    if not isinstance(obj, dict):
        return False
    if obj.get("type") == "session_meta":
        return isinstance(obj.get("payload"), dict)
    return isinstance(obj.get("id"), str) and "timestamp" in obj and "type" not in obj and "message" not in obj


def _is_item(obj) -> bool:
    """A line after the bare header: a typed response item, or a `record_type` marker."""
    return isinstance(obj, dict) and (isinstance(obj.get("type"), str) or obj.get("record_type") == "state")


def detect(sample) -> bool:
    if not sample.is_lines:
        doc = sample.document
        return (
            isinstance(doc, dict)
            and isinstance(doc.get("session"), dict)
            and isinstance(doc.get("items"), list)
            and all(isinstance(i, dict) and "type" in i for i in doc["items"][:20])
        )
    first = sample.first_objects(20)
    return bool(first) and _is_header(first[0]) and (first[0].get("type") == "session_meta" or _is_item_after(first))


def _is_item_after(first: list[dict]) -> bool:
    """A bare header is Codex's when the lines after it are rollout items."""
    return len(first) > 1 and all(_is_item(x) for x in first[1:])


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text") or "" for p in content or [] if isinstance(p, dict))


def _output(output) -> str:
    """A call's output: text; the `{output, metadata}` object Codex wrote (as JSON text, in 2025); content parts."""
    if isinstance(output, str) and output.startswith("{"):
        try:
            parsed = orjson.loads(output)
        except orjson.JSONDecodeError:
            return output
        return _output(parsed) if isinstance(parsed, dict) and "output" in parsed else output
    if isinstance(output, dict):
        return _text(output.get("output") if "output" in output else output.get("content"))
    return _text(output)


def _reasoning(item: dict) -> str:
    parts = [*(item.get("summary") or []), *(item.get("content") or [])] if isinstance(item, dict) else []
    return "\n\n".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))


class Conversation:
    """Messages of a rollout, built item by item; a compaction starts the next segment."""

    def __init__(self, system: str | None, notes: Counter):
        self.system, self.notes = system, notes
        self.segments: list[list[dict]] = [[]]
        self.turn: dict | None = None  # the assistant turn of the model response being read
        self.start()

    @property
    def messages(self) -> list[dict]:
        return self.segments[-1]

    def start(self) -> None:
        if self.system:
            self.messages.append({"role": "system", "content": self.system})

    def add(self, item: dict, i: int) -> None:
        kind = item.get("type")
        if kind in ASSISTANT_SIDE:
            self._assistant(item, kind, i)
        elif kind == "message":
            role = ROLES.get(item.get("role"))
            if role is None:
                raise _common.Malformed(f"response item {i} is a message with no role Codex writes")
            if role == "assistant":
                self._assistant(item, kind, i)
                return
            self.turn = None
            text = _text(item.get("content"))
            if role == "user" and text.strip().startswith(ENVIRONMENT) and text.strip().endswith(">"):
                self.notes["codex_environment_context_left_out"] += 1
                return
            self.messages.append({"role": role, "content": text})
        elif isinstance(kind, str) and kind.endswith("_output") and "call_id" in item:
            self.turn = None
            self.messages.append(
                {"role": "tool", "tool_call_id": item["call_id"], "content": _output(item.get("output"))}
            )
        else:  # snapshots, generated images, encrypted compactions: not conversation
            self.notes[f"codex_{kind}_items_left_out"] += 1

    def _assistant(self, item: dict, kind: str, i: int) -> None:
        if self.turn is None:
            self.turn = {"role": "assistant", "content": None, "reasoning_content": None}
            self.messages.append(self.turn)
        turn = self.turn
        if kind == "message":
            text = _text(item.get("content"))
            turn["content"] = "\n\n".join(t for t in (turn["content"], text) if t) or None
        elif kind == "reasoning":
            text = _reasoning(item)
            turn["reasoning_content"] = "\n\n".join(t for t in (turn["reasoning_content"], text) if t) or None
        elif kind == "web_search_call":
            self.notes["codex_web_search_calls_left_out"] += 1
        else:
            call_id = item.get("call_id") or item.get("id")
            if not call_id or (kind != "local_shell_call" and not item.get("name")):
                raise _common.Malformed(f"response item {i} is a {kind} with no call_id or name")
            name, args = {
                "function_call": (item.get("name"), item.get("arguments")),
                "custom_tool_call": (item.get("name"), {"input": item.get("input")}),
                "local_shell_call": ("local_shell", item.get("action")),
            }[kind]
            turn.setdefault("tool_calls", []).append(_common.call(call_id, name, args))

    def compact(self, payload: dict) -> None:
        """A compaction: the next segment opens with what replaced the history (or the summary)."""
        self.turn = None
        self.segments.append([])
        replacement = payload.get("replacement_history")
        if isinstance(replacement, list) and replacement:
            for i, item in enumerate(replacement):
                if isinstance(item, dict):
                    self.add(item, i)
        else:
            self.start()
            if summary := _text(payload.get("message")):
                self.messages.append({"role": "user", "content": summary})
        self.turn = None


def _lines(lines: list[dict]) -> tuple[dict, list[tuple[str, dict]]]:
    """(the session's meta, its (kind, payload) lines) whatever the layout."""
    if lines and lines[0].get("type") == "session_meta":
        return lines[0]["payload"], [
            (x.get("type"), x.get("payload")) for x in lines[1:] if isinstance(x.get("payload"), dict)
        ]
    header, rest = (lines[0], lines[1:]) if lines else ({}, [])
    return header, [("response_item", x) for x in rest if x.get("type")]


def _parent(source: Any) -> str | None:
    """The parent thread of a sub-agent's rollout (`source: {subagent: {thread_spawn: {parent_thread_id}}}`)."""
    if isinstance(source, dict):
        for key, value in source.items():
            if key == "parent_thread_id" and isinstance(value, str):
                return value
            if found := _parent(value):
                return found
    return None


def convert(meta: dict, lines: list[tuple[str, dict]], sample, batch) -> list[dict]:
    instructions = meta.get("base_instructions") or meta.get("instructions")
    system = _text((instructions or {}).get("text") if isinstance(instructions, dict) else instructions) or None
    talk = Conversation(system, batch.notes)
    recorded = Counter(
        _text(p.get("content")).strip()
        for kind, p in lines
        if kind == "response_item" and p.get("type") == "message" and p.get("role") == "user"
    )
    model = meta.get("model")
    for i, (kind, payload) in enumerate(lines):
        if kind == "response_item":
            talk.add(payload, i)
        elif kind == "compacted":
            talk.compact(payload)
        elif kind == "turn_context":
            model = model or payload.get("model")
        elif kind == "event_msg" and payload.get("type") == "user_message":
            text = _text(payload.get("message"))
            if not text.strip() or CONTEXT.match(text):
                continue
            if recorded[text.strip()] > 0:
                recorded[text.strip()] -= 1  # the response item records it
            else:
                talk.turn = None
                talk.messages.append({"role": "user", "content": text})
                batch.notes["codex_requests_read_from_event_messages"] += 1
    parts = [s for s in talk.segments if any(m["role"] == "assistant" for m in s)]
    if not parts:
        raise _common.Malformed("the rollout holds no assistant turn")
    every = [m for s in parts for m in s]
    request = next((m["content"] for m in every if m["role"] == "user" and not CONTEXT.match(m["content"])), "")
    task = {
        "task_id": _common.task_id_of(NAME, request),
        "category": NAME,
        "request": request,
        "tools": _common.called_tools(every),
    }
    thread = str(meta.get("id") or sample.path.stem)
    parent = _parent(meta.get("source"))
    if len(parts) > 1:
        batch.notes["codex_compactions_split_into_segments"] += len(parts) - 1
    return _common.context_runs(thread, task, str(model or "unknown"), parts, sample, batch, parent)


def records(sample, batch):
    if not sample.is_lines:  # the TypeScript CLI's JSON document
        doc = sample.document
        yield from _common.record_lines(
            1,
            lambda: convert(doc["session"], [("response_item", x) for x in doc["items"]], sample, batch),
            sample.head,
            "bad_codex_record",
        )
        return
    yield from _common.session_records(sample, "bad_codex_record", lambda lines: convert(*_lines(lines), sample, batch))
