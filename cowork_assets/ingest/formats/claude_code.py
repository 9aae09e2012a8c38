"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`): JSON Lines of entries
`{type, uuid, parentUuid, isSidechain, sessionId, message}`, one transcript per file.

A file is one trajectory (raw_record 1): the main chain, followed by `parentUuid` back from the last main
entry, so branches left behind by an edited or retried turn are not read. Sidechains (`isSidechain`: the
runs of sub-agents the `Task` tool starts) are left out, counted in the batch notes. Bookkeeping entries
(`summary`, `system`, `file-history-snapshot`, `queue-operation`, meta messages) are not conversation.
Assistant entries of one model message (`message.id`; Claude Code writes one entry per content block) are
one turn: its `text` blocks the content, its `tool_use {id, name, input}` blocks the calls; `thinking` is
left out. A user entry's `tool_result {tool_use_id, content, is_error}` blocks are tool messages, its text
the user's message (images left out). The task is the first request's hash, the model the assistant's;
there is no grader: the run is ungraded. A line that is not JSON quarantines the transcript, saying which.
"""

from __future__ import annotations

from cowork_assets.ingest import recount
from cowork_assets.ingest.formats import _common

NAME = "claude_code"
PRIORITY = 30
RECORDS = recount.ONE
ENTRY_TYPES = ("user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation")


def looks_like(obj) -> bool:
    return isinstance(obj, dict) and obj.get("type") in ENTRY_TYPES and ("sessionId" in obj or "leafUuid" in obj)


def detect(sample) -> bool:
    return sample.is_lines and looks_like(sample.first_record)


def main_chain(entries: list[dict]) -> list[dict]:
    """The conversation entries from the root to the last main-chain entry, by parentUuid."""
    by_uuid = {e["uuid"]: e for e in entries if isinstance(e.get("uuid"), str)}
    main = [e for e in entries if e.get("type") in ("user", "assistant") and not e.get("isSidechain")]
    chain, seen = [], set()
    entry = main[-1] if main else None
    while entry is not None and entry.get("uuid") not in seen:
        seen.add(entry.get("uuid"))
        chain.append(entry)
        entry = by_uuid.get(entry.get("parentUuid"))
    return [e for e in reversed(chain) if e.get("type") in ("user", "assistant") and not e.get("isMeta")]


def _text(blocks) -> str:
    if isinstance(blocks, str):
        return blocks
    return "".join(b.get("text", "") for b in blocks or [] if isinstance(b, dict) and b.get("type") == "text")


def messages_of(chain: list[dict]) -> list[dict]:
    out: list[dict] = []
    turn = None  # the model message the last assistant turn came from
    for entry in chain:
        message = entry.get("message")
        if not isinstance(message, dict):
            raise _common.Malformed(f"entry {entry.get('uuid')!r} has no message")
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        if entry["type"] == "assistant":
            calls = [_common.call(b["id"], b["name"], b.get("input")) for b in blocks if b.get("type") == "tool_use"]
            text = _text(blocks)
            if turn is not None and message.get("id") == turn:
                out[-1]["content"] = (out[-1]["content"] or "") + text or None
                out[-1].setdefault("tool_calls", []).extend(calls)
            else:
                out.append({"role": "assistant", "content": text or None, **({"tool_calls": calls} if calls else {})})
            turn = message.get("id")
            continue
        turn = None
        for b in blocks:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                out.append({"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": _text(b.get("content"))})
        if text := _text(blocks):
            out.append({"role": "user", "content": text})
    return [m for m in out if m["role"] != "assistant" or m["content"] or m.get("tool_calls")]  # thinking only


def convert(entries: list[dict], sample, batch) -> dict:
    sidechain = sum(bool(e.get("isSidechain")) for e in entries)
    if sidechain:
        batch.notes["claude_code_sidechain_entries_left_out"] += sidechain
    messages = messages_of(main_chain(entries))
    session = next((e["sessionId"] for e in entries if isinstance(e.get("sessionId"), str)), sample.path.stem)
    model = next(
        (
            e["message"]["model"]
            for e in entries
            if e.get("type") == "assistant" and (e.get("message") or {}).get("model")
        ),
        "unknown",
    )
    return _common.trajectory(
        batch.unique_id(session, sample), _common.request_task(NAME, messages), str(model), messages
    )


def records(sample, batch):
    yield _common.session_record(sample, "bad_claude_code_record", lambda lines: convert(lines, sample, batch))
