"""aider's chat history (`.aider.chat.history.md`, written at the repository's root; `--chat-history-file` names
another): Markdown that aider appends to, one session after each `# aider chat started at <time>` line.

aider writes three kinds of text (`aider/io.py`): the user's input, each line prefixed `#### `; aider's own output
(files added, edits applied, commits, the shell commands it ran, token counts), each message a `> ` line ending in
two spaces (a message of several lines has the prefix on its first line only); and the model's reply, as it came,
between blank lines. A line is read as the user's or aider's only outside the reply's fenced blocks, and a `> `
line as aider's only where its message ends in aider's two spaces before another message starts (a quote in the
reply does not).

Each session with a reply is one trajectory. Its turns:
- the user's input; a command is not a turn, except the ones that ask the model something (`/ask`, `/code`,
  `/architect`, `/context`: their text is the request); `/run` output is not in the file (aider prints it and
  writes only "Added N lines of output to the chat"), so a `/run` is left out with the other commands (counted);
- the reply: its reasoning (aider's `<thinking-content-…>` span, or a model's own leading `<think>` span) apart,
  the rest its text. A reply with edit blocks (`<<<<<<< SEARCH`, a unified diff), or whose edits aider applied (a
  whole file after its name), or with shell commands aider offered to run is a text-protocol action, as
  mini-swe-agent's is: one `edit` call (the files it edits, the commands it offers) or one `bash` call, and aider's
  output after it (the edits applied, the commit, the commands run) its result. aider's output after any other turn
  is bookkeeping, not a message.
The model is the session's `Model:` / `Main model:` line; the repository, the `Git repo:` and working-folder lines.
The history has no grade: runs are ungraded. Text before the first session (an editor's mode line) is no session.
"""

from __future__ import annotations

import re

from cowork_assets.ingest import reasoning, recount
from cowork_assets.ingest.formats import _common

NAME = "aider"
PRIORITY = 60
RECORDS = recount.ONE
CODING_CATEGORIES = (NAME,)  # its runs are coding-agent runs
SESSION = re.compile(r"^# aider chat started at (.+)$", re.M)
ASKING = re.compile(r"^/(ask|code|architect|context)\b\s*", re.S)
MODEL = re.compile(r"^(?:Main model|Models?): ([^\s,]+)")
REPOSITORY = re.compile(r"^(Git repo|Git working dir|Cur working dir): (.+)$")
THINKING = re.compile(r"\A\s*<(thinking-content-[0-9a-f]+|think|thinking|reasoning)>(.*?)</\1>\s*", re.S)
FENCE = re.compile(r"^\s*(```|~~~)")
EDIT_MARKS = re.compile(r"^(<{5,9} SEARCH|={5,9}$|>{5,9} REPLACE|--- \S|\+\+\+ \S|@@ )", re.M)
SEARCH_BLOCK = re.compile(r"^(?:(?!```)(\S[^\n]*)\n)?(?:```[^\n]*\n)?(?:\S[^\n]*\n)?<{5,9} SEARCH", re.M)
APPLIED = re.compile(r"^Applied edit to (.+)$", re.M)
RUN_OFFERED = re.compile(r"^Run shell commands?\?", re.M)
SHELL = re.compile(r"```(?:bash|sh|shell|zsh|fish|cmd|powershell)?[ \t]*\n(.*?)\n?```", re.S)


def detect(sample) -> bool:
    return not sample.is_lines and SESSION.search(sample.head.decode("utf-8", "replace")) is not None


def blocks(lines: list[str]) -> list[tuple[str, str]]:
    """A session's text as (kind, text) blocks in order: `user`, `aider` (its output) and `reply`."""
    out: list[tuple[str, list[str]]] = []
    fenced, i = False, 0

    def add(kind: str, *new: str) -> None:
        if out and out[-1][0] == kind:
            out[-1][1].extend(new)
        else:
            out.append((kind, list(new)))

    while i < len(lines):
        line = lines[i]
        if out and out[-1][0] == "reply" and fenced:
            add("reply", line)
            fenced = not FENCE.match(line)
        elif line.startswith("#### ") or line.rstrip() == "####":
            add("user", line[5:].removesuffix("  "))
        elif (line.startswith("> ") or line.rstrip() == ">") and (end := message_end(lines, i)) is not None:
            add("aider", line[2:].rstrip(), *(x.rstrip() for x in lines[i + 1 : end + 1]))
            i = end
        else:
            add("reply", line)
            fenced = bool(FENCE.match(line))
        i += 1
    merged: list[tuple[str, str]] = []
    for kind, text in ((kind, "\n".join(text).strip()) for kind, text in out):
        if not text or (kind == "user" and text == "<blank>"):
            continue
        if merged and kind == "aider" == merged[-1][0]:  # aider's output around a blank line is one output
            merged[-1] = (kind, f"{merged[-1][1]}\n{text}")
        else:
            merged.append((kind, text))
    return merged


def message_end(lines: list[str], i: int) -> int | None:
    """The last line of the message of aider's a `>` line starts: the first line from it that ends in aider's two
    spaces (a message of several lines, blank ones among them, has the prefix on its first line only), before
    another message or input starts; None when there is none (a quote in the model's reply)."""
    for j in range(i, len(lines)):
        if j > i and lines[j].startswith(("#### ", "> ")):
            return None
        if lines[j].endswith("  ") or (j == i and lines[j].rstrip() == ">"):
            return j
    return None


def action(reply: str, output: str | None) -> tuple[str, dict] | None:
    """The text-protocol action of a reply: its edits (and the commands it offers), else the shell commands aider
    offered to run; None when it has neither."""
    commands = [c.strip() for c in SHELL.findall(reply)] if output and RUN_OFFERED.search(output) else []
    if EDIT_MARKS.search(reply) or APPLIED.search(output or ""):  # a block format, or any aider applied (whole files)
        named = [m for m in SEARCH_BLOCK.findall(reply) if m and not m.startswith(("<", "=", ">"))]
        files = list(dict.fromkeys(named or APPLIED.findall(output or "")))
        return "edit", {"files": files} | ({"commands": commands} if commands else {})
    if commands:
        return "bash", {"command": "\n".join(commands)}
    return None


def session_messages(text: str, notes) -> tuple[list[dict], str | None, dict]:
    """(messages, model, repository) of one session."""
    parts = blocks(text.splitlines()[1:])
    messages: list[dict] = []
    model, repository = None, {}
    for i, (kind, body) in enumerate(parts):
        if kind == "aider":
            for line in body.splitlines():
                if (found := MODEL.match(line)) and model is None:
                    model = found.group(1)
                elif found := REPOSITORY.match(line):
                    repository.setdefault(found.group(1).lower().replace(" ", "_"), found.group(2).strip())
            continue
        if kind == "user":
            if body.startswith("/") or body.startswith("!"):
                if not (asked := ASKING.match(body)) or not body[asked.end() :].strip():
                    notes["aider_commands_not_messages"] += 1
                    continue
                body = body[asked.end() :]
            messages.append({"role": "user", "content": body})
            continue
        thought = THINKING.match(body)
        content, found = (body[thought.end() :], thought.group(2).strip()) if thought else (body, None)
        content, leading = reasoning.split_text(content)
        message = {"role": "assistant", "content": content, "reasoning_content": reasoning.joined(found, leading)}
        output = parts[i + 1][1] if i + 1 < len(parts) and parts[i + 1][0] == "aider" else None
        if (act := action(content, output)) is not None:
            call_id = f"call_{i}"
            message["tool_calls"] = [{**_common.call(call_id, *act), "type": _common.TEXT_ACTION}]
            messages.append(message)
            if output is not None:
                messages.append({"role": "tool", "tool_call_id": call_id, "name": act[0], "content": output})
            continue
        messages.append(message)
    return messages, model, repository


def convert(text: str, sample, batch) -> list[dict]:
    starts = [m.start() for m in SESSION.finditer(text)]
    if starts and text[: starts[0]].strip():
        batch.notes["aider_text_before_the_first_session_not_read"] += 1
    out = []
    for start, end in zip(starts, [*starts[1:], len(text)], strict=True):
        session = text[start:end]
        messages, model, repository = session_messages(session, batch.notes)
        if not any(m["role"] == "assistant" for m in messages):
            batch.notes["aider_sessions_without_a_reply_left_out"] += 1
            continue
        request = _common.first_user_text(messages)
        started = SESSION.match(session).group(1).strip()
        out.append(
            _common.trajectory(
                batch.unique_id(f"{sample.path.stem or sample.path.name}@{started}", sample),
                {
                    "task_id": _common.task_id_of(NAME, request),
                    "category": NAME,
                    "request": request,
                    "tools": _common.called_tools(messages),
                    "initial_state": {"repository": repository} if repository else {},
                },
                model or "unknown",
                messages,
            )
        )
    if not out:
        raise _common.Malformed("the chat history holds no session with a reply from the model")
    return out


def records(sample, batch):
    def build():
        if sample.path.stat().st_size > sample.max_record_bytes:
            raise _common.Malformed(f"the history is larger than max_record_bytes ({sample.max_record_bytes})")
        return convert(sample.path.read_bytes().decode("utf-8", "replace"), sample, batch)

    yield from _common.record_lines(1, build, sample.head, "bad_aider_record")
