"""A text-protocol harness's actions (mini-swe-agent, SWE-agent, SWE-smith's chat records): the action is in the
assistant's text, one shell block or one XML-style function call. Ingest turns it into a tool call of type
`TEXT_ACTION` (so truncation and the evidence audit see the observation after it as one); publication either keeps
the turn as the agent wrote it or keeps the call and takes the action out of the text (`action_format`)."""

from __future__ import annotations

import re

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


def without_action(content: pl.Expr) -> pl.Expr:
    """The text of an assistant turn with its one action taken out (the block `text_action` read), trimmed."""
    labelled = r"(?s)```(?:bash|sh|shell|mswea_bash_command)[ \t]*\n.*?\n?```"
    unlabelled = r"(?s)```[ \t]*\n.*?\n?```"
    return (
        pl.when(content.str.contains(XML_FUNCTION.pattern))
        .then(content.str.replace(r"(?s)" + XML_FUNCTION.pattern, ""))
        .when(content.str.contains(labelled))
        .then(content.str.replace(labelled, ""))
        .otherwise(content.str.replace(unlabelled, ""))
        .str.strip_chars()
    )
