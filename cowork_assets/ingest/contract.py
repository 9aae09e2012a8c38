"""The `cowork.trajectory/v1` contract, declared once (the pydantic models below), and what is derived from it:
the fast validator's msgspec structs (`fast_structs`) and the columnar reader's schema (`columnar_schema`).
`record.py` gives the pydantic verdict and its reasons; the staging tables' pandera models hold the contract's
message fields as columns, and tests/ingest/test_contract.py checks that they cannot drift.

Validation is strict about types (a number where a string belongs is `wrong_type`) and lenient about extra keys
(producers add their own). Free-form parts (initial state, tool schemas, check bodies, tool-call arguments) are
only required to be JSON of the right broad shape here; the findings stages judge their content.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal

import annotated_types
import msgspec
import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from cowork_assets.ingest.roles import ROLES, TEACHER_ROLES

SCHEMA_ID = "cowork.trajectory/v1"


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
    role: Literal[ROLES]
    content: str | None = None
    reasoning_content: str | None = None  # the assistant's reasoning before this message (thinking, reasoning items)
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class Check(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")  # a check type's own fields
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


# --- derived: the fast validator's structs ---------------------------------------------------------------------
_BOUNDS = {annotated_types.MinLen: "min_length", annotated_types.Ge: "ge", annotated_types.Le: "le"}


def _bound(field) -> dict:
    """A field's bounds (`Field(min_length=1)`, `ge`, `le`) as msgspec.Meta keywords: annotated_types names its
    constraints' attributes as the keywords."""
    return {_BOUNDS[type(m)]: getattr(m, _BOUNDS[type(m)]) for m in field.metadata if type(m) in _BOUNDS}


def fast_structs(model: type[BaseModel], free_form, raw: frozenset[str] = frozenset()) -> type[msgspec.Struct]:
    """The model as msgspec structs that accept no more than it does: unknown keys forbidden (they could hide any
    depth), free-form objects as `free_form` (a bounded JSON type), a model that allows extra keys as a free-form
    object, and the fields named in `raw` left as undecoded `msgspec.Raw` for the caller to check."""

    def of(annotation, name: str = ""):
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation.model_config.get("extra") == "allow":
                return dict[str, free_form]
            return fast_structs(annotation, free_form, raw)
        if origin in (typing.Union, types.UnionType):
            return typing.Union[tuple(of(a, name) for a in args)]  # noqa: UP007 (built from a tuple)
        if origin is list:
            return list[of(args[0], name)]
        if origin is dict:
            return msgspec.Raw if name in raw else dict[str, free_form if args[1] is Any else of(args[1])]
        return annotation  # str, float, bool, None, a Literal

    fields = []
    for name, field in model.model_fields.items():
        kind = of(field.annotation, name)
        kind = Annotated[kind, msgspec.Meta(**bounds)] if (bounds := _bound(field)) else kind
        if field.is_required():
            fields.append((field.alias or name, kind))
        else:
            default = field.get_default()
            if kind is msgspec.Raw or typing.get_args(kind)[:1] == (msgspec.Raw,):
                default = [] if isinstance(default, list) else msgspec.Raw(msgspec.json.encode(default))
            fields.append((field.alias or name, kind, default))
    return msgspec.defstruct(model.__name__, fields, kw_only=True, forbid_unknown_fields=True)


# --- derived: the columnar reader's schema ---------------------------------------------------------------------
_COLUMN = {str: pl.String, float: pl.Float64, bool: pl.Boolean}


def columnar_schema(model: type[BaseModel], as_text: frozenset[str] = frozenset()) -> pl.Schema:
    """The model as a polars schema: nested models as structs, lists as lists, and every free-form object (and the
    fields named in `as_text`) as its JSON text, the form in which it is hashed and stored. The `schema` marker is
    not a column: validation has checked it."""

    def of(annotation, name: str = "") -> pl.DataType:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if name in as_text or typing.get_origin(annotation) is dict or dict in map(typing.get_origin, args):
            return pl.String
        if typing.get_origin(annotation) in (typing.Union, types.UnionType):
            return of(args[0], name)
        if typing.get_origin(annotation) is list:
            return pl.List(of(args[0]))
        if typing.get_origin(annotation) is Literal:
            return pl.String
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return pl.Struct({n: of(f.annotation, n) for n, f in annotation.model_fields.items()})
        return _COLUMN[annotation]

    return pl.Schema({n: of(f.annotation, n) for n, f in model.model_fields.items() if f.alias != "schema"})
