"""What trainers load from the project besides the published files: chat templates for training
(`templates/`, with `{% generation %}` markers for assistant-only loss) and verl's classes (`verl`: the
tools that answer RL tasks' calls from the workspace simulation, and the multi-turn SFT dataset); and a trainer's
own tokenizer and chat template, as the `tokenizer` setting counts with them (`tokenizer`)."""

from importlib.resources import files

import orjson

TEMPLATES = files(__name__) / "templates"


def chat_template(name: str) -> str:
    """A shipped training chat template by file name (`qwen2.5.jinja`, `llama3.1.jinja`)."""
    return (TEMPLATES / name).read_text()


def for_chat_template(messages: list[dict], tools_json: str) -> tuple[list[dict], list[dict]]:
    """A published sample read as text (polars, pyarrow) as `apply_chat_template(messages, tools=tools)` expects
    it: tool-call arguments as objects (a template's `tojson` would encode the JSON text twice); arguments that are not
    JSON (a structure finding keeps such runs out of SFT) stay text, as a template is given them."""
    out = []
    for m in messages:
        message = {k: v for k, v in m.items() if v is not None and k != "tool_calls"}
        if m.get("tool_calls"):
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": c["type"],
                    "function": {"name": c["function"]["name"], "arguments": _arguments(c["function"]["arguments"])},
                }
                for c in m["tool_calls"]
            ]
        out.append(message)
    return out, orjson.loads(tools_json)


def _arguments(text: str):
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
