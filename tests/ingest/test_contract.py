"""The trajectory contract is declared once (ingest/contract.py): the fast validator's structs and the columnar
reader's schema are derived from it, and the staging tables hold its message, teacher and grade fields, so a field
added to the contract cannot be missed by any of them."""

from __future__ import annotations

import typing

import msgspec
import pytest
from pydantic import BaseModel

from cowork_assets.ingest import contract, fast_accept, flatten
from cowork_assets.ingest.schemas import Messages, Trajectories
from cowork_assets.store.models import polars_schema

MODELS = [contract.Trajectory, contract.Task, contract.Teacher, contract.Grade, contract.Message, contract.ToolCall]


def _struct_of(model: type[BaseModel]) -> type[msgspec.Struct]:
    """The fast validator's struct for a contract model, found by walking from the trajectory's."""
    todo = [fast_accept._trajectory.type]
    while todo:
        struct = todo.pop()
        if struct.__name__ == model.__name__:
            return struct
        for field in msgspec.structs.fields(struct):
            todo += [t for t in _types_in(field.type) if isinstance(t, type) and issubclass(t, msgspec.Struct)]
    raise AssertionError(f"no struct for {model.__name__}")


def _types_in(kind) -> list:
    return [kind, *(t for arg in typing.get_args(kind) for t in _types_in(arg))]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_the_fast_validator_checks_every_field_of_the_contract_with_the_same_requiredness(model):
    fields = {f.encode_name: f.required for f in msgspec.structs.fields(_struct_of(model))}
    assert fields == {(f.alias or name): f.is_required() for name, f in model.model_fields.items()}


def test_the_columnar_reader_reads_every_field_but_the_schema_marker():
    assert list(flatten.RAW_SCHEMA) == [n for n in contract.Trajectory.model_fields if n != "schema_"]
    message = flatten.RAW_SCHEMA["messages"].inner
    assert [f.name for f in message.fields] == list(contract.Message.model_fields)
    calls = dict((f.name, f.dtype) for f in message.fields)["tool_calls"].inner
    assert [f.name for f in calls.fields] == list(contract.ToolCall.model_fields)


def test_the_staging_tables_hold_the_contracts_message_teacher_and_grade_fields():
    messages = polars_schema(Messages)
    assert set(contract.Message.model_fields) <= set(messages)
    columns = Messages.to_schema().columns
    optional = {n for n, f in contract.Message.model_fields.items() if not f.is_required()} - {"tool_calls"}
    assert {n for n in contract.Message.model_fields if columns[n].nullable} == optional  # tool_calls: [] for none
    assert typing.get_args(contract.Message.model_fields["role"].annotation) == tuple(
        columns["role"].checks[0].statistics["allowed_values"]
    )
    trajectories = set(polars_schema(Trajectories))
    assert {f"teacher_{n}" for n in contract.Teacher.model_fields} <= trajectories
    assert {f"grade_{n}" for n in contract.Grade.model_fields} <= trajectories


def test_a_field_added_to_the_contract_reaches_the_fast_validator_and_the_reader():
    class Tagged(contract.Message):
        channel: str | None = None

    decoder = msgspec.json.Decoder(contract.fast_structs(Tagged, fast_accept.JSON))
    assert decoder.decode(b'{"role": "user", "channel": "final"}').channel == "final"
    with pytest.raises(msgspec.ValidationError, match="channel"):
        decoder.decode(b'{"role": "user", "channel": 5}')
    with pytest.raises(msgspec.ValidationError, match="unknown field"):
        decoder.decode(b'{"role": "user", "mood": "fine"}')
    assert contract.columnar_schema(Tagged)["channel"] == flatten.RAW_SCHEMA["group_id"]
