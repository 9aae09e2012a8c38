"""The msgspec fast path never accepts a line the pydantic contract rejects, and accepts real good lines."""

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cowork_assets.ingest.fast_accept import FREE_FORM_DEPTH, accepts
from cowork_assets.ingest.formats import scan_batch
from cowork_assets.ingest.record import BOM, contract_verdict
from cowork_assets.store.raw_files import discover_batches
from tests.conftest import TESTS
from tests.ingest.test_record import good

HOSTILE = TESTS / "hostile" / "corpus"


def known_keys_only(**changes) -> dict:
    """test_record's good record without its extra keys (those always take the pydantic path)."""
    record = good(**changes)
    del record["producer_note"], record["messages"][2]["extra"]
    return record


def _lines(raw_root: Path) -> list[bytes]:
    """Every non-blank, readable raw line under a raw root, as ingest reads them."""
    out = []
    for batch in discover_batches(raw_root):
        sources = scan_batch(raw_root, batch)
        out += [
            line.data.removesuffix(b"\r")
            for path in sources.files
            for line in sources.records(path)
            if line.error is None and line.data.strip()
        ]
    return out


def test_generated_good_lines_take_the_fast_path_and_bad_ones_do_not(default_raw):
    verdicts = [(accepts(line.removeprefix(BOM)), contract_verdict(line) == ("", "")) for line in _lines(default_raw)]
    assert (True, False) not in verdicts
    assert verdicts.count((False, True)) == 0  # every good generated line is decided fast
    assert verdicts.count((True, True)) > 250 and verdicts.count((False, False)) > 0


def test_hostile_corpus_lines_are_never_accepted_against_the_contract():
    lines = _lines(HOSTILE)
    assert len(lines) > 20
    for line in lines:
        if accepts(line.removeprefix(BOM)):
            assert contract_verdict(line) == ("", ""), line[:200]


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize("depth", [3, 8, 9, 140, 190, 196, 197, 198, 199, 200, 250, 5000])
@pytest.mark.parametrize("where", ["initial_state", "tools", "checks", "arguments", "extra_key"])
def test_deep_nesting_is_left_to_the_contract(where, depth):
    task = {
        "task_id": "x",
        "category": "c",
        "request": "r",
        "initial_state": {"s": "DEEP"},
        "tools": [{"t": "DEEP"}],
        "checks": [{"id": "c", "type": "t", "x": "DEEP"}],
    }
    record = known_keys_only(task={k: v for k, v in task.items() if k in ("task_id", "category", "request", where)})
    if where == "arguments":
        record["messages"][1]["tool_calls"][0]["function"]["arguments"] = {"a": "DEEP"}
    if where == "extra_key":
        record["messages"][0]["meta"] = "DEEP"
    line = orjson.dumps(record).replace(b'"DEEP"', _deep(depth))
    fast, (reason, _) = accepts(line), contract_verdict(line)
    assert not (fast and reason), reason
    if depth >= 250:
        assert reason == "too_deeply_nested"
    elif depth <= 190:
        assert reason == ""
    # Raw task parts pass with up to 190 brackets, other free-form values up to FREE_FORM_DEPTH levels,
    # unknown keys never.
    expected = {"initial_state": depth < 190, "tools": depth < 190, "extra_key": False}
    assert fast == expected.get(where, depth <= FREE_FORM_DEPTH)


def test_invalid_utf8_inside_raw_task_parts_is_not_accepted():
    task = {"task_id": "x", "category": "c", "request": "r", "initial_state": {"s": "S"}, "tools": [{"t": "T"}]}
    line = orjson.dumps(known_keys_only(task=task))
    assert accepts(line)
    for target in (b'"S"', b'"T"', b'"s"'):
        bad = line.replace(target, b'"\xff\xfe"')
        assert not accepts(bad) and contract_verdict(bad)[0] == "invalid_utf8"


# Arbitrary JSON, including nesting far deeper than the contract allows and awkward strings.
_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=5)  # lone surrogates included
_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | _text
_json = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3), max_leaves=12
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _get(value, path):
    for key in path:
        value = value[key]
    return value


def _replace(value, path, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    return [_replace(v, rest, new) if i == head else v for i, v in enumerate(value)]


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_record_is_fast_accepted_only_if_the_contract_accepts_it(data):
    record = known_keys_only()
    assert accepts(orjson.dumps(record))
    paths = list(_paths(record))
    path = data.draw(st.sampled_from(paths))
    kind = data.draw(st.sampled_from(["text", "value", "deep", "drop", "bytes"]))
    if kind == "text":  # same type, awkward content: control characters, lone surrogates, any plane
        text_paths = [p for p in paths if isinstance(_get(record, p), str)]
        line = json.dumps(
            _replace(record, data.draw(st.sampled_from(text_paths)), data.draw(_text)),
            ensure_ascii=data.draw(st.booleans()),
        ).encode("utf-8", "surrogatepass")
    elif kind == "value":
        line = json.dumps(_replace(record, path, data.draw(_json))).encode()  # big ints, NaN, \\udXXX
    elif kind == "deep":
        depth = data.draw(st.integers(1, 260))
        line = orjson.dumps(_replace(record, path, "DEEP")).replace(b'"DEEP"', _deep(depth))
    elif kind == "drop" and path:
        parent, key = _get(record, path[:-1]), path[-1]
        pruned = (
            {k: v for k, v in parent.items() if k != key}
            if isinstance(parent, dict)
            else [v for i, v in enumerate(parent) if i != key]
        )
        line = orjson.dumps(_replace(record, path[:-1], pruned))
    else:
        line = orjson.dumps(record)
        at = data.draw(st.integers(0, len(line)))
        line = line[:at] + data.draw(st.binary(min_size=1, max_size=4)) + line[at:]
    fast = accepts(line)
    event("fast path" if fast else "pydantic path")
    if fast:
        assert contract_verdict(line) == ("", ""), line
