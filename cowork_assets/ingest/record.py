"""The `cowork.trajectory/v1` contract, and the verdict for one raw line: valid, or why not.

Validation is strict about types (a number where a string belongs is `wrong_type`) and lenient
about extra keys (producers add their own). Free-form parts — initial state, tool schemas, check
bodies, tool-call arguments — are only required to be JSON of the right broad shape here; the
findings stages judge their content.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cowork_assets.ingest.fast_accept import accepts
from cowork_assets.ingest.roles import TEACHER_ROLES

SCHEMA_ID = "cowork.trajectory/v1"
BOM = "\ufeff".encode()
EXCERPT_CHARS = 200


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class Function(_Strict):
    name: str
    arguments: str | dict[str, Any]  # OpenAI sends a JSON string; some producers send an object


class ToolCall(_Strict):
    id: str
    type: str = "function"
    function: Function


class Message(_Strict):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    reasoning_content: str | None = None  # the assistant's reasoning before this message (thinking, reasoning items)
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class Check(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    id: str
    type: str


class Task(_Strict):
    task_id: str = Field(min_length=1)
    category: str
    request: str
    initial_state: dict[str, Any] = {}
    tools: list[dict[str, Any]] = []
    checks: list[Check] = []


class Teacher(_Strict):
    model: str
    run_id: str | None = None
    role: Literal[TEACHER_ROLES]


class Grade(_Strict):
    score: float = Field(ge=0.0, le=1.0)  # a grader's score is a share: 5.0 is damage, not a grade
    passed: bool
    checks: dict[str, bool] = {}


class Trajectory(_Strict):
    schema_: Literal["cowork.trajectory/v1"] = Field(alias="schema")
    trajectory_id: str = Field(min_length=1)
    task: Task
    teacher: Teacher
    group_id: str | None = None
    messages: list[Message] = Field(min_length=1)
    grade: Grade | None = None


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
