"""The verdict for one raw line against the `cowork.trajectory/v1` contract (`contract.py`): valid, or why not.

The fast mirror decides most lines; the contract's pydantic models give the exact reason for the rest.
"""

from __future__ import annotations

import re

from pydantic import ValidationError

from cowork_assets.ingest.contract import SCHEMA_ID, Trajectory
from cowork_assets.ingest.fast_accept import accepts

BOM = "\ufeff".encode()
EXCERPT_CHARS = 200


# A UTF-16 surrogate escape not part of a valid pair: decodes to text no tokenizer or Arrow accepts.
_LONE_SURROGATE = re.compile(
    r"(?<!\\)\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})(?<!\\)\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def _reason(exc: ValidationError, text: str) -> tuple[str, str]:
    err = exc.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in err["loc"]) or "<root>"
    kind = err["type"]
    if kind == "json_invalid":
        if m := _LONE_SURROGATE.search(text):
            return "lone_surrogate", f"unpaired surrogate escape {m.group(0)} at char {m.start()}"
        if "recursion limit" in err["msg"]:
            return "too_deeply_nested", err["msg"]
        return "bad_json", err["msg"]
    if kind == "missing":
        return "missing_field", loc
    if loc == "schema":
        return "unsupported_schema", f"schema is {err.get('input')!r}, expected {SCHEMA_ID!r}"
    if kind.endswith("_type") or kind == "model_attributes_type":
        return "wrong_type", f"{loc}: {err['msg']}"
    return "invalid_value", f"{loc}: {err['msg']}"


def validate_line(data: bytes) -> tuple[str, str]:
    """Check one raw line: ("", "") when it is valid, else (reason, detail)."""
    if accepts(data.removeprefix(BOM)):  # most lines: the fast mirror is certain
        return "", ""
    return contract_verdict(data)


def contract_verdict(data: bytes) -> tuple[str, str]:
    """The contract's own verdict on a line (pydantic), with the exact reason."""
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        return "invalid_utf8", f"byte {exc.start}: {exc.reason}"
    try:
        Trajectory.model_validate_json(text)
    except ValidationError as exc:
        return _reason(exc, text)
    return "", ""


def excerpt(data: bytes) -> str:
    """A short, always-printable view of a rejected line."""
    return data[: EXCERPT_CHARS * 4].decode("utf-8", errors="replace")[:EXCERPT_CHARS]
