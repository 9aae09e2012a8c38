"""Token counts in a trainer's own tokenizer: a local Hugging Face tokenizer folder (`tokenizer.json`, and the chat
template in `tokenizer_config.json` or `chat_template.jinja`), read offline with `tokenizers`.

A sample is counted as a trainer sees it: its messages and tools rendered by the chat template as transformers'
`apply_chat_template` renders them (a sandboxed Jinja environment with `trim_blocks` and `lstrip_blocks`, its
`tojson`, `raise_exception` and `strftime_now`, and `{% generation %}` blocks), then encoded without adding special
tokens, as `apply_chat_template(..., tokenize=True)` does.
"""

from __future__ import annotations

import functools
import json
from datetime import datetime
from pathlib import Path

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")


def tokenizer_problem(folder: str) -> str | None:
    """Why a folder is not a tokenizer this can count with, or None."""
    path = Path(folder).expanduser()
    if not (path / "tokenizer.json").is_file():
        return f"{folder} has no tokenizer.json (a Hugging Face tokenizer folder, as save_pretrained writes it)"
    if _template_text(path) is None:
        return f"{folder} has no chat template (tokenizer_config.json's chat_template, or chat_template.jinja)"
    return None


def _config(path: Path) -> dict:
    file = path / "tokenizer_config.json"
    return json.loads(file.read_text()) if file.is_file() else {}


def _template_text(path: Path, named: str = "default") -> str | None:
    if (path / "chat_template.jinja").is_file():
        return (path / "chat_template.jinja").read_text()
    template = _config(path).get("chat_template")
    if isinstance(template, list):  # named templates: the default one (or the first)
        by_name = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        return by_name.get(named) or next(iter(by_name.values()), None)
    return template if isinstance(template, str) else None


class _Generation(jinja2.ext.Extension):
    """`{% generation %}...{% endgeneration %}` (the marks for assistant-only loss) renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def _raise(message: str):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


class ChatTokenizer:
    def __init__(self, folder: str):
        from tokenizers import Tokenizer  # only runs that name a tokenizer load it

        path = Path(folder).expanduser()
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, jinja2.ext.loopcontrols]
        )
        env.filters["tojson"] = _tojson
        env.globals |= {"raise_exception": _raise, "strftime_now": lambda f: datetime.now().strftime(f)}
        self.template = env.from_string(_template_text(path))
        config = _config(path)
        self.special = {
            k: v.get("content") if isinstance(v, dict) else v for k in SPECIAL_TOKENS if (v := config.get(k))
        }

    def render(self, messages: list[dict], tools: list[dict] | None) -> str:
        return self.template.render(messages=messages, tools=tools or None, add_generation_prompt=False, **self.special)

    def count_sample(self, messages: list[dict], tools: list[dict] | None) -> int:
        """Tokens of a whole sample as the trainer renders it (messages as `for_chat_template` gives them)."""
        return len(self.tokenizer.encode(self.render(messages, tools), add_special_tokens=False).ids)

    def count_texts(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)]


@functools.cache
def chat_tokenizer(folder: str) -> ChatTokenizer:
    return ChatTokenizer(folder)
