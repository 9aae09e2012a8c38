"""An assistant turn's reasoning, wherever a provider or harness wrote it: the one place every reader takes it from.

On the message (the first field found wins: providers write the same text in several, OpenRouter in `reasoning`
and `reasoning_details` both):
- `reasoning_content` (DeepSeek, Qwen, vLLM and SGLang reasoning parsers),
- `reasoning` as text (OpenRouter, vLLM's newer field),
- `reasoning_details[]` (OpenRouter: `reasoning.text` items' `text`, `reasoning.summary` items' `summary`;
  `reasoning.encrypted` is not readable),
- `thinking` as text (Ollama).

In the content, given as parts: Anthropic `thinking` blocks, `reasoning` parts (Inspect AI, LLaMA-Factory, the
Responses API's reasoning summaries), Gemini parts flagged `thought: true`. These parts are never the turn's text.

In the content, given as text (or text parts): a *leading* `<think>...</think>` span, which DeepSeek-R1, QwQ and
Qwen3 write there when they are served without a reasoning parser. Only a leading, closed span is split out: a
`<think>` later in the text, or one never closed, may be the subject of the conversation (code that parses such
tags) and stays text.
"""

from __future__ import annotations

import re
from typing import Any

LEADING_THINK = re.compile(r"\A\s*<think>(.*?)</think>\s*", re.S)
REASONING_PARTS = ("thinking", "redacted_thinking", "reasoning", "reasoning_text", "summary_text")


def is_reasoning_part(part: Any) -> bool:
    """A content part that holds reasoning (or its redacted form), never the turn's text."""
    return isinstance(part, dict) and (part.get("type") in REASONING_PARTS or part.get("thought") is True)


def _part_reasoning(part: dict) -> str | None:
    for key in ("thinking", "reasoning", "text", "summary"):
        if isinstance(part.get(key), str) and part[key]:
            return part[key]
    return None


def joined(*texts: str | None) -> str | None:
    """The non-empty texts, each once (whatever whitespace surrounds it), in order, joined by a blank line; None when
    there are none."""
    once: dict[str, str] = {}
    for t in texts:
        if isinstance(t, str) and t.strip():
            once.setdefault(t.strip(), t)
    return "\n\n".join(once.values()) or None


def field_reasoning(message: dict) -> str | None:
    """The reasoning a message carries in a field of its own (see the module's docstring), or None."""
    for key in ("reasoning_content", "reasoning", "thinking"):
        if isinstance(message.get(key), str) and message[key].strip():
            return message[key]
    details = message.get("reasoning_details")
    if isinstance(details, list):
        return joined(*(d.get("text") or d.get("summary") for d in details if isinstance(d, dict)))
    return None


def split_text(text: str | None) -> tuple[str | None, str | None]:
    """(text, reasoning): a leading `<think>` span split out of a text."""
    found = LEADING_THINK.match(text) if isinstance(text, str) else None
    if not found:
        return text, None
    return text[found.end() :], found.group(1).strip() or None


def assistant_turn(message: dict, content: Any = None) -> tuple[str | None, str | None]:
    """(text, reasoning) of an assistant message: its content's text parts (or text, a leading `<think>` span split
    out), and its reasoning from its fields, its reasoning parts and that span. `content` defaults to the message's."""
    content = message.get("content") if content is None else content
    if isinstance(content, list):
        text, span = split_text(
            "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content if not is_reasoning_part(p))
        )
        in_content = joined(*(_part_reasoning(p) for p in content if is_reasoning_part(p)), span)
    else:
        text, in_content = split_text(content if isinstance(content, str) else None)
    return text, joined(field_reasoning(message), in_content)
