"""Tool parameter schemas, compiled once each with jsonschema-rs, and the fit of call arguments to them.

A schema is JSON Schema 2020-12 unless it names its draft. References are resolved inside the schema
only (`offline`): a schema from raw data must not make us read a URL or a local file.
"""

from __future__ import annotations

from functools import lru_cache

import jsonschema_rs
import orjson


@lru_cache(maxsize=4096)
def _compiled(schema_json: str) -> tuple[jsonschema_rs.Validator | None, str | None]:
    """(validator, None), or (None, why the schema is not one): the same tools recur across tasks."""
    try:
        return jsonschema_rs.validator_for(orjson.loads(schema_json), offline=True), None
    except ValueError as exc:  # jsonschema_rs.ValidationError is one: not a schema, a bad regex, a missing $ref
        return None, str(exc).splitlines()[0][:200]


def schema_problem(schema_json: str) -> str | None:
    """Why a tool's parameter schema is not a valid JSON Schema, or None."""
    return _compiled(schema_json)[1]


@lru_cache(maxsize=65536)  # the same arguments recur (a search, a lookup by id) across runs of a task
def arguments_problem(schema_json: str, arguments_json: str) -> str | None:
    """Where and why arguments (valid JSON) do not fit a schema; None if they do or the schema is invalid
    (an invalid schema is a task finding, not a sample one)."""
    validator = _compiled(schema_json)[0]
    if validator is None:
        return None
    arguments = orjson.loads(arguments_json)
    try:
        error = next(validator.iter_errors(arguments), None)
    except ValueError:  # an error's message quoting arguments nested ~256 deep ("Recursion limit reached")
        return None if validator.is_valid(arguments) else "<arguments>: nested too deeply to say where they do not fit"
    return None if error is None else f"{'/'.join(map(str, error.instance_path)) or '<arguments>'}: {error.message}"
