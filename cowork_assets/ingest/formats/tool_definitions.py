"""Tool definitions beside results (`tools_<domain>.json` or `tools.json`: a list of OpenAI function
schemas). Auxiliary: the tau-bench and tau2-bench files of the same domain take their tools from it."""

from __future__ import annotations

from cowork_assets.ingest import recount

NAME = "tool_definitions"
PRIORITY = 10
RECORDS = recount.NONE
AUXILIARY = True


def is_tools(data) -> bool:
    return (
        isinstance(data, list)
        and bool(data)
        and all(
            isinstance(t, dict) and isinstance(t.get("function", t), dict) and "name" in t.get("function", t)
            for t in data
        )
    )


def detect(sample) -> bool:
    return is_tools(sample.document)


def records(sample, batch):
    return iter(())


def for_domain(batch, domain: str) -> list | None:
    """The raw tool list for `domain` (`tools_<domain>.json`, else `tools.json`), or None."""
    by_name = {s.path.stem.lower(): s.document for s in batch.auxiliary(NAME)}
    return by_name.get(f"tools_{domain}", by_name.get("tools"))
