"""The check-type home: each type's rules, with hand-made checks and transcripts and exact expectations."""

from pathlib import Path

import orjson

from cowork_assets import check_types
from cowork_assets.check_types import evidence_values, first_turns, type_of, types
from cowork_assets.evidence.extract import package_items
from cowork_assets.validation.consistency import package_findings

CHECK_MODULES = Path(check_types.__file__).parent


def test_every_type_module_is_registered_by_its_file():
    declared = sorted(p.stem for p in CHECK_MODULES.glob("*.py") if not p.stem.startswith("_"))
    assert (
        sorted(types())
        == declared
        == [
            "db_match",
            "distinct_items",
            "env_assertion",
            "keywords_present",
            "nl_assertion",
            "state_equals",
            "tool_called",
            "tool_not_called",
        ]
    )


CHECKS = [
    {"id": "sent", "type": "tool_called", "tool": "send", "args": {"to": "c_4201", "urgent": True, "kind": "sms"}},
    {"id": "twice", "type": "tool_called", "tool": "send", "min_calls": 2},
    {"id": "never", "type": "tool_not_called", "tool": "delete"},
    {"id": "kw", "type": "keywords_present", "keywords": ["Q3-Final", "1,200"], "evidence": ["REF-77"]},
    {"id": "items", "type": "distinct_items", "tool": "todo", "key": "title", "expected": 2},
    {"id": "state", "type": "state_equals", "path": "todos.0.title", "value": {"title": "Plan 2027 budget"}},
    {"id": "env", "type": "env_assertion", "func_name": "assert_on", "arguments": {"line": "L1001"}},
    {"id": "db", "type": "db_match"},
    {"id": "nl", "type": "nl_assertion", "assertion": "polite"},
    {"id": "odd", "type": "custom_judge", "evidence": ["ORD-9000"]},
]
TURNS = [
    ("Looking up", [("send", '{"to": "C_4201", "urgent": true, "kind": "SMS"}')]),  # matched normalised
    (None, [("todo", '{"title": "A"}'), ("todo", '{"title": "a"}')]),  # one distinct title, normalised
    ("ok", [("todo", '{"title": "B"}'), ("send", '{"to": "x"}')]),
    ("Report q3-final sent; total 1200.", []),
]


def test_evidence_values_per_type():
    got = {c["id"]: list(evidence_values(c, frozenset({"sms"}))) for c in CHECKS}
    assert got == {
        "sent": [("derived", "c_4201")],  # booleans and enum choices are not records
        "twice": [],
        "never": [],
        "kw": [("explicit", "REF-77"), ("derived", "Q3-Final"), ("derived", "1,200")],
        "items": [],
        "state": [("derived", "Plan 2027 budget")],
        "env": [],
        "db": [],
        "nl": [],  # state and judge checks: no text evidence
        "odd": [("explicit", "ORD-9000")],  # an unknown type keeps its explicit evidence
    }
    assert type_of(CHECKS[4]).created(CHECKS[4]) == ("todo", "title")


def test_replay_finds_the_first_satisfying_turn_and_leaves_undecidable_checks_open():
    assert first_turns(CHECKS, TURNS) == {
        "sent": 1,
        "twice": 3,
        "never": 1,
        "kw": 4,
        "items": 3,
        "state": None,
        "env": None,
        "db": None,
        "nl": None,
        "odd": None,
    }
    assert [c for c in types() if not types()[c].decidable] == ["env_assertion", "nl_assertion", "state_equals"]
    db = type_of({"type": "db_match"})  # the end state: decidable from the reference's writes, when it has them
    assert (db.is_decidable({"type": "db_match"}), db.is_decidable({"type": "db_match", "writes": []})) == (False, True)


def test_distinct_items_has_one_rule_everywhere():
    broken = {"id": "items", "type": "distinct_items", "tool": "todo", "key": "title"}  # no expected count
    assert type_of(broken).problems(broken) == ["needs a tool name, a key name and an integer expected count"]
    assert type_of(broken).created(broken) is None and type_of(broken).count(broken) is None
    assert first_turns([broken], TURNS) == {"items": None}  # never met, not met at once
    _, specs, _ = package_items(orjson.dumps([broken]).decode(), "[]")
    assert specs == []
    findings = package_findings(
        "t", "h" * 16, "add two todos", '[{"name": "todo"}]', orjson.dumps([broken]).decode(), "{}"
    )
    assert [(f["kind"], f["check_id"]) for f in findings] == [("invalid_check", "items")]


def test_consistency_rules_come_from_the_types():
    request = "Send it and add three todos."
    tools = '[{"name": "send"}, {"name": "todo"}]'
    findings = package_findings("t", "h" * 16, request, tools, orjson.dumps(CHECKS).decode(), "{}")
    assert sorted((f["kind"], f["check_id"], f["severity"]) for f in findings) == [
        ("count_mismatch", "items", "error"),  # asks for three, counts two
        ("unexposed_tool_in_check", "never", "error"),
        ("unknown_check_type", "odd", "warning"),
    ]


def test_unknown_types_are_counted_not_fatal():
    items, _, unknown = package_items(orjson.dumps(CHECKS).decode(), "[]")
    assert dict(unknown) == {"custom_judge": 1}
    assert ("odd", "ORD-9000") in [(i["check_id"], i["value"]) for i in items]


# Checks whose fields hold other types than their type reads, as raw task packages can carry them.
ODD_FIELDS = [
    {"id": ["a", "list"], "type": "tool_called", "tool": "send", "min_calls": "x"},  # id no key can be; no number
    {"id": "kw", "type": "keywords_present", "keywords": True},  # no list: no keywords, as an empty list
    {"id": "blank", "type": "keywords_present", "keywords": [""]},  # an empty keyword shows nowhere
    {"id": "never", "type": "tool_not_called", "tool": ["delete"]},  # no tool name, as none given
    {"id": "db", "type": "db_match", "writes": [], "read_only": [["send"], "todo"]},  # a list is no tool name
    {"id": "zero", "type": "distinct_items", "tool": "other", "key": "title", "expected": 0},
]


def test_checks_with_fields_of_other_types_are_replayed_explained_and_searched_without_a_crash():
    from cowork_assets.check_types._base import Unmet
    from cowork_assets.validation.consistency import exposed

    # The list id is found by its JSON text; `todo` alone is read-only, so every `send` call is a write too many.
    assert first_turns(ODD_FIELDS, TURNS) == {
        '["a","list"]': 1,
        "kw": 1,
        "blank": None,
        "never": 1,
        "db": None,
        "zero": 1,
    }
    assert [list(evidence_values(c, frozenset())) for c in ODD_FIELDS] == [[]] * 6
    zero = ODD_FIELDS[-1]
    unmet = Unmet(zero, check_types.Plan([zero]).prepared[0], {}, "zero (distinct_items)")
    assert type_of(zero).why_unmet([unmet], {}) == (  # its tool never called
        "grader counts calls",
        "zero: 0 other calls, fewer than 0 distinct title values",
    )
    odd_enum = [{"name": "send", "parameters": {"type": "object", "properties": {"kind": {"enum": 5}}}}]
    _, specs, _ = package_items(orjson.dumps(ODD_FIELDS).decode(), orjson.dumps(odd_enum).decode())
    assert [s["check_id"] for s in specs] == ["zero"]
    assert exposed('[{"name": "send", "endpoint": {"method": "POST"}}, {"name": "todo", "endpoint": "GET /t"}]') == {
        "send": "",
        "todo": "GET /t",
    }
