"""A text-protocol harness's actions (mini-swe-agent, SWE-agent, SWE-smith's chat records): the action is in the
assistant's text, one shell block or one XML-style function call. Ingest turns it into a tool call of type
`TEXT_ACTION` (so truncation and the evidence audit see the observation after it as one); publication either keeps
the turn as the agent wrote it or keeps the call and takes the action out of the text (`action_format`)."""

from __future__ import annotations

import re

import orjson
import polars as pl

TEXT_ACTION = "text"  # the `type` of a tool call read from an assistant's text

# The action: one shell block in the assistant's text (mini-swe-agent, SWE-agent), or one XML-style function call
# (`<function=name><parameter=key>value</parameter></function>`: SWE-smith, OpenHands' prompted function calling).
SHELL_FENCE = re.compile(r"```(bash|sh|shell|mswea_bash_command)?[ \t]*\n(.*?)\n?```", re.S)
XML_FUNCTION = re.compile(r"<function=([\w.-]+)>(.*?)</function>", re.S)
XML_PARAMETER = re.compile(r"<parameter=([\w.-]+)>\n?(.*?)\n?</parameter>", re.S)


def fenced_command(text: str | None) -> str | None:
    """The one shell command a text-protocol assistant turn holds: its only labelled shell block, else its only
    unlabelled block; None when it holds none or several (the harness rejects those as format errors)."""
    blocks = SHELL_FENCE.findall(text or "")
    labelled = [body for lang, body in blocks if lang]
    if len(labelled) == 1:
        return labelled[0]
    return blocks[0][1] if not labelled and len(blocks) == 1 else None


def text_action(text: str | None) -> tuple[str, dict] | None:
    """The one action (tool name, arguments) of a text-protocol assistant turn: an XML-style function call, else a
    shell block (`bash`, `{"command": ...}`); None when there is none, or more than one."""
    functions = XML_FUNCTION.findall(text or "")
    if functions:
        return (functions[0][0], dict(XML_PARAMETER.findall(functions[0][1]))) if len(functions) == 1 else None
    command = fenced_command(text)
    return None if command is None else ("bash", {"command": command})


def action_removed(text: str | None, arguments: str | None) -> str | None:
    """The text of an assistant turn with the action its harness executed taken out, trimmed: its XML-style call,
    else the shell block whose body is the executed command (`arguments`: the call's JSON; the last such block, as
    SWE-agent runs the last block of a response), else its only block. A turn with several blocks none of which
    was executed keeps them all: they are what the agent wrote, not the call."""
    if text is None:
        return None
    found = XML_FUNCTION.search(text)
    if found is None:
        command = _command(arguments)
        blocks = list(SHELL_FENCE.finditer(text))
        executed = [b for b in blocks if command is not None and b.group(2).strip() == command.strip()]
        found = executed[-1] if executed else (blocks[0] if len(blocks) == 1 else None)
    return (text[: found.start()] + text[found.end() :] if found else text).strip()


def _command(arguments: str | None) -> str | None:
    try:
        parsed = orjson.loads(arguments) if arguments else None
    except orjson.JSONDecodeError:
        return None
    return parsed.get("command") if isinstance(parsed, dict) and isinstance(parsed.get("command"), str) else None


def without_action(content: pl.Expr, arguments: pl.Expr) -> pl.Expr:
    """`action_removed` of each turn (`arguments`: its text call's arguments). Only text-protocol turns published
    as calls (`action_format=tool_calls`) are given to it."""
    return pl.struct(text=content, arguments=arguments).map_elements(
        lambda r: action_removed(r["text"], r["arguments"]), return_dtype=pl.String, skip_nulls=False
    )
