"""A fast, conservative mirror of the `cowork.trajectory/v1` contract (msgspec, several times as fast as pydantic).

`accepts(line)` is True only for lines the pydantic contract accepts (tests check this on hostile and generated
lines); anything else — bad JSON, a wrong type, an unknown key, unusually deep nesting — returns False and takes
the pydantic path, which gives the exact quarantine reason. So the mirror may reject more than the contract, never
less: where it cannot decide cheaply, it says no. Its structs are derived from the contract's models
(`contract.fast_structs`), so a field added there is checked here too.

pydantic rejects JSON nested deeper than 200 levels. msgspec has no such limit, so nesting is bounded
here: free-form values may nest at most `FREE_FORM_DEPTH` levels, except the large free-form parts of a
task, kept as raw JSON for speed, which pass with at most `MAX_RAW_OPENINGS` brackets in all.
"""

from __future__ import annotations

from functools import lru_cache

import msgspec

from cowork_assets.ingest.contract import Check, Trajectory, fast_structs

FREE_FORM_DEPTH = 8  # the decoder's type tree doubles with each level
MAX_RAW_OPENINGS = 190  # a task part this small nests < 200 levels with the 4 above it, whatever its shape


def _bounded_json(depth: int):
    value = str | int | float | bool | None
    for _ in range(depth):
        value = str | int | float | bool | None | list[value] | dict[str, value]
    return value


JSON = _bounded_json(FREE_FORM_DEPTH)
RAW_TASK_PARTS = frozenset({"initial_state", "tools"})  # large and repeated: checked apart, each distinct one once
CHECK_FIELDS = tuple(Check.model_fields)  # a check is free-form beyond its required strings
_trajectory = msgspec.json.Decoder(fast_structs(Trajectory, JSON, RAW_TASK_PARTS))
_bounded_object = msgspec.json.Decoder(dict[str, JSON])


def _object_ok(data: bytes) -> bool:
    """A raw task part (which msgspec skipped unchecked) is an object of valid UTF-8, not deeply nested."""
    if data[:1] != b"{":
        return False
    try:
        if not data.isascii():
            data.decode()
        if data.count(b"{") + data.count(b"[") > MAX_RAW_OPENINGS:  # rare: find the real depth
            _bounded_object.decode(data)
    except (UnicodeDecodeError, msgspec.DecodeError, RecursionError):
        return False
    return True


# A corpus has a few dozen tool schemas, each repeated in thousands of records: each is checked once
# (small ones only, so that the cache stays small whatever the input).
_small_object_ok = lru_cache(maxsize=1024)(_object_ok)


def _tool_ok(data: bytes) -> bool:
    return _small_object_ok(data) if len(data) <= 16_384 else _object_ok(data)


def accepts(line: bytes) -> bool:
    """True if `line` (UTF-8 JSON, BOM removed) certainly satisfies the contract."""
    try:
        task = _trajectory.decode(line).task
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return False
    return (
        _object_ok(bytes(task.initial_state))
        and all(_tool_ok(bytes(tool)) for tool in task.tools)
        and all(type(c.get(name)) is str for c in task.checks for name in CHECK_FIELDS)
    )
