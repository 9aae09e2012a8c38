"""Each kind of bad line gets its own quarantine reason; good variants are accepted."""

import orjson
import pytest

from cowork_assets.ingest.record import excerpt, validate_line


def good(**changes) -> dict:
    t = {
        "schema": "cowork.trajectory/v1",
        "trajectory_id": "t1",
        "task": {
            "task_id": "x-1",
            "category": "single_turn",
            "request": "r",
            "checks": [{"id": "c", "type": "some_future_type", "foo": 1}],
        },
        "teacher": {"model": "m", "role": "teacher"},
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}],
            },
            {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "ok", "extra": True},
        ],
        "grade": {"score": 1, "passed": True},
        "producer_note": "extra keys are fine",
    }
    t.update(changes)
    return t


def verdict(obj) -> tuple[str, str]:
    data = obj if isinstance(obj, bytes) else orjson.dumps(obj)
    return validate_line(data)


def test_valid_record_with_object_arguments_unknown_check_type_and_extra_keys():
    assert validate_line(orjson.dumps(good())) == ("", "")


def test_paired_surrogate_escapes_are_fine():
    line = orjson.dumps(good()).replace(b'"hi"', b'"smile \\ud83d\\ude00"')
    assert validate_line(line) == ("", "")


def test_bom_is_tolerated():
    assert validate_line(b"\xef\xbb\xbf" + orjson.dumps(good())) == ("", "")


@pytest.mark.parametrize(
    "line, reason, detail",
    [
        (b'{"schema": "cowork.traj', "bad_json", "Invalid JSON"),
        (b"\xff" + orjson.dumps(good()), "invalid_utf8", "byte 0"),
        (b"[1, 2]", "wrong_type", "<root>"),
        (orjson.dumps({k: v for k, v in good().items() if k != "messages"}), "missing_field", "messages"),
        (orjson.dumps(good(trajectory_id=7)), "wrong_type", "trajectory_id"),
        (orjson.dumps(good(messages="hello")), "wrong_type", "messages"),
        (orjson.dumps(good(schema="cowork.trajectory/v2")), "unsupported_schema", "v2"),
        (orjson.dumps(good(messages=[])), "invalid_value", "messages"),
        (orjson.dumps(good(messages=[{"role": "robot", "content": "x"}])), "invalid_value", "messages.0.role"),
        (orjson.dumps(good(teacher={"model": "m", "role": "teacher", "run_id": 3})), "wrong_type", "teacher.run_id"),
        (orjson.dumps(good(grade={"score": "1.0", "passed": True})), "wrong_type", "grade.score"),
        (orjson.dumps(good()).replace(b'"hi"', b'"a\\ud800b"'), "lone_surrogate", "\\ud800"),
        (orjson.dumps(good()).replace(b'"hi"', b'"a\\udc00b"'), "lone_surrogate", "\\udc00"),
    ],
)
def test_bad_lines_get_a_specific_reason(line, reason, detail):
    got_reason, got_detail = verdict(line)
    assert got_reason == reason
    assert detail in got_detail


def test_excerpt_is_short_and_printable():
    assert excerpt(b"\xff\xfe" + b"a" * 1000) == "\ufffd\ufffd" + "a" * 198
