"""A task package's tool list (`task_packages.tools`, a JSON string), parsed once per distinct list.

Thousands of packages share a few dozen tool lists, and several stages read the same list: each
distinct list is parsed once per process here.
"""

from __future__ import annotations

from functools import lru_cache

import orjson


@lru_cache(maxsize=1024)
def named_tools(tools_json: str) -> tuple[dict, ...]:
    """The tools of the list that are objects with a string `name`, in order. Shared: do not modify them."""
    return tuple(t for t in orjson.loads(tools_json) if isinstance(t, dict) and isinstance(t.get("name"), str))


@lru_cache(maxsize=1024)
def openai_tools(tools_json: str) -> str:
    """A package's tool list as OpenAI function schemas (JSON string)."""
    return orjson.dumps(
        [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t.get("description") or "",
                    "parameters": t.get("parameters") or {"type": "object", "properties": {}},
                },
            }
            for t in named_tools(tools_json)
        ]
    ).decode()
