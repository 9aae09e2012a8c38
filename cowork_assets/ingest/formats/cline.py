"""Cline and Roo Code task folders (`tasks/<task id>/`): the conversation the model had is
`api_conversation_history.json`, a JSON list of Anthropic messages (`{role, content}`; content a string or blocks:
`text`, `image`, `thinking`, `tool_use`, `tool_result`). The other files of the folder (`ui_messages.json`,
`task_metadata.json`, ...) are the extension's own (`cline_task`: read for the model and Cline's truncations, no
records). The file is one run.

Both extensions long used a text protocol: the assistant writes one tool use as XML in its text
(`<read_file>\\n<path>src/a.ts</path>\\n</read_file>`), and the next user message, `[read_file for 'src/a.ts']
Result:` and the output (then the environment details the extension appends), is its result: the tool use becomes a
text-protocol call (its parameters its arguments) and that message its result, as mini-swe-agent's are. Releases
with native tool calling write `tool_use` / `tool_result` blocks, read as calls and their results. The first user
message's `<task>` is the request; `attempt_completion` ends a run. The model is the last of `task_metadata.json`'s
`model_usage`, else the last `modelInfo` of `ui_messages.json`, else `unknown`; the folder has no grade: runs are
ungraded.

**Condensing** (Roo Code): a condense keeps every message, tags those it summarised (`condenseParent`: the summary's
`condenseId`) and inserts its summary (`isSummary`) before the messages it kept (the last three: the first of them
one millisecond after the summary's `ts`); a release that deleted the summarised messages tagged none and kept
nothing after. Each condense starts a new context, each its own trajectory (`<task>`, `<task>#2`, ...): the one
before holds what the model had, the kept messages included; the next opens with the untagged user messages before
the summary (the task) and the summary's text as a user message, so no turn is trained twice or in a context the
model did not have.

**Sliding-window truncation** starts a context too, at the first message it kept: everything before is the context
the model had, and the next opens with the task (and Roo Code's marker): each call read once, next to its result.
Roo Code tags the messages it hid (`truncationParent`) and inserts a marker (`isTruncationMarker`, a user message
the model reads) before the first it kept; Cline keeps the history whole and records the range it hid on the
extension's own messages (`ui_messages.json`'s `conversationHistoryDeletedRange`, `[2, end]`: the task and the first
reply stay), the message after the range holding the results of the calls the last hidden reply made: it stays with
them."""

from __future__ import annotations

import re

from cowork_assets.ingest import reasoning, recount
from cowork_assets.ingest.formats import _common

NAME = "cline"
PRIORITY = 20
RECORDS = recount.ONE
CODING_CATEGORIES = (NAME,)  # its runs are coding-agent runs
TERMINAL_TOOLS = frozenset({"attempt_completion"})
HISTORY = "api_conversation_history.json"
KEPT_BY_A_CONDENSE = 3  # Roo Code's N_MESSAGES_TO_KEEP
# Cline's and Roo Code's tools (their system prompts): an XML element named otherwise in a reply is text, not a call.
TOOLS = frozenset(
    "execute_command read_file write_to_file replace_in_file apply_diff insert_content search_and_replace "
    "search_files list_files list_code_definition_names codebase_search browser_action use_mcp_tool "
    "access_mcp_resource ask_followup_question attempt_completion new_task plan_mode_respond act_mode_respond "
    "load_mcp_documentation web_fetch web_search switch_mode update_todo_list fetch_instructions new_rule "
    "report_bug condense summarize_task focus_chain run_slash_command generate_image".split()
)
TOOL_OPEN = re.compile(r"<(" + "|".join(sorted(TOOLS)) + r")>")
PARAMETER = re.compile(r"<([A-Za-z_]+)>\n?(.*?)\n?</\1>", re.S)
TASK = re.compile(r"<task>\n?(.*?)\n?</task>", re.S)


def detect(sample) -> bool:
    doc = sample.document
    return (
        sample.path.name == HISTORY and isinstance(doc, list) and all(isinstance(m, dict) and "role" in m for m in doc)
    )


def text_action(message: dict) -> tuple[str, dict] | None:
    """The XML tool use of an assistant turn (the first; the extensions run one a turn)."""
    text = message.get("content") or ""
    opened = TOOL_OPEN.search(text)
    if opened is None:
        return None
    name = opened.group(1)
    end = text.find(f"</{name}>", opened.end())
    body = text[opened.end() : end if end >= 0 else len(text)]
    return name, {key: value for key, value in PARAMETER.findall(body)}


def _blocks(content) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def conversation(history: list[dict]) -> list[dict]:
    out = []
    for m in history:
        blocks = _blocks(m.get("content"))
        if m["role"] == "assistant":
            text, found = reasoning.assistant_turn({}, [b for b in blocks if b.get("type") != "tool_use"])
            calls = [_common.call(b["id"], b["name"], b.get("input")) for b in blocks if b.get("type") == "tool_use"]
            out.append(
                {"role": "assistant", "content": text, "reasoning_content": found}
                | ({"tool_calls": calls} if calls else {})
            )
            continue
        for b in blocks:
            if b.get("type") == "tool_result":
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": b.get("tool_use_id"),
                        "content": _common.text(_blocks(b.get("content"))) or "",
                    }
                )
        texts = [b.get("text") or "" for b in blocks if b.get("type") == "text"]
        if texts:
            out.append({"role": "user", "content": "\n\n".join(texts)})
    return _common.text_protocol(out, action_of=text_action)


def _task_files(batch) -> dict:
    """Each task folder's model (the last of its `task_metadata.json`'s `model_usage`, else the last `modelInfo` its
    `ui_messages.json` records: Cline writes one on each message) and the ends of the ranges of the history Cline's
    truncations hid, in order."""
    usage, shown, hidden = {}, {}, {}
    for aux in batch.auxiliary("cline_task"):
        doc, folder = aux.document, aux.path.parent
        if aux.path.name == "task_metadata.json" and isinstance(doc, dict):
            found = [u["model_id"] for u in doc.get("model_usage") or [] if isinstance(u, dict) and u.get("model_id")]
            usage |= {folder: str(found[-1])} if found else {}
        elif aux.path.name == "ui_messages.json" and isinstance(doc, list):
            said = [m for m in doc if isinstance(m, dict)]
            found = [m["modelInfo"]["modelId"] for m in said if (m.get("modelInfo") or {}).get("modelId")]
            shown |= {folder: str(found[-1])} if found else {}
            hidden[folder] = sorted({end for m in said if (end := _range_end(m)) is not None})
    folders = usage.keys() | shown.keys() | hidden.keys()
    return {f: (usage.get(f) or shown.get(f, "unknown"), tuple(hidden.get(f, ()))) for f in folders}


def _range_end(said: dict) -> int | None:
    hid = said.get("conversationHistoryDeletedRange")
    ok = isinstance(hid, list) and len(hid) == 2 and all(isinstance(i, int) and not isinstance(i, bool) for i in hid)
    return hid[1] if ok and 1 <= hid[0] <= hid[1] else None


def task_files(sample, batch) -> tuple[str, tuple[int, ...]]:
    """The model and Cline's truncations of this task folder (`unknown` and none without its files)."""
    return batch.once(NAME, lambda: _task_files(batch)).get(sample.path.parent, ("unknown", ()))


def _kept(history: list[dict], at: int) -> int:
    """How many messages after the summary at `at` its condense kept: Roo Code's last three, the first of them one
    millisecond after the summary; none when the condense deleted what it summarised (it tagged no message)."""
    summary = history[at]
    condensed = summary.get("condenseId")
    if not condensed or not any(m.get("condenseParent") == condensed for m in history[:at]):
        return 0
    after = []
    for m in history[at + 1 : at + 1 + KEPT_BY_A_CONDENSE]:
        if m.get("isSummary"):
            break
        after.append(m)
    stamped = isinstance(summary.get("ts"), int) and after and after[0].get("ts") is not None
    return 0 if stamped and after[0]["ts"] != summary["ts"] + 1 else len(after)


def _text(message: dict) -> str:
    return _common.text([b for b in _blocks(message.get("content")) if b.get("type") == "text"]) or ""


def _still_seen(history: list[dict], at: int) -> list[dict]:
    """The user messages before `at` that no condense or truncation hid: the task (and the markers of earlier
    truncations)."""
    hidden = ("condenseParent", "truncationParent", "isSummary")
    return [x for x in history[:at] if x["role"] == "user" and not any(x.get(key) for key in hidden)]


def contexts(history: list[dict], notes, hidden_ends: tuple[int, ...] = ()) -> list[list[dict]]:
    """The stored messages of each context the model had, a condense or a truncation ending one (see the module's
    docstring); `hidden_ends`: where the ranges Cline's truncations hid end."""
    cut_after = {end + 1 for end in hidden_ends if end + 2 < len(history)}
    out, current, i = [], [], 0
    while i < len(history):
        m = history[i]
        if m.get("isTruncationMarker"):  # read as the user's note whatever its role: never a turn to train
            out.append(current)
            current = [*_still_seen(history, i), {"role": "user", "content": _text(m)}]
            notes["cline_truncations_split_into_contexts"] += 1
        elif m.get("isSummary"):
            kept = _kept(history, i)
            out.append(current + history[i + 1 : i + 1 + kept])
            current = [*_still_seen(history, i), {"role": "user", "content": _text(m)}]
            i += kept
            notes["cline_condenses_split_into_contexts"] += 1
        else:
            current.append(m)
        if i in cut_after:
            out.append(current)
            current = history[:1]
            notes["cline_truncations_split_into_contexts"] += 1
        i += 1
    return [*out, current]


def convert(history: list[dict], sample, batch) -> list[dict]:
    model, hidden_ends = task_files(sample, batch)
    runs = [
        c
        for c in map(conversation, contexts(history, batch.notes, hidden_ends))
        if any(m["role"] == "assistant" for m in c)
    ]
    if not runs:
        raise _common.Malformed("the conversation holds no turn of the model")
    first = _common.first_user_text(runs[0])
    request = task.group(1).strip() if (task := TASK.search(first)) else first
    task_ = {"task_id": _common.task_id_of(NAME, request), "category": NAME, "request": request}
    return _common.context_runs(sample.path.parent.name, task_, model, runs, sample, batch)


def records(sample, batch):
    yield from _common.record_lines(1, lambda: convert(sample.document, sample, batch), sample.head, "bad_cline_record")
