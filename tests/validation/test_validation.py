"""Structure findings on hand-made samples, task findings against the generator's labels."""

import orjson
import polars as pl
import pytest

from cowork_assets.store.models import TOOL_CALL
from cowork_assets.store.registry import TABLES
from cowork_assets.synthetic.services import TOOLS, UNEXPOSED
from cowork_assets.validation.consistency import package_findings, requested_counts, suggest
from cowork_assets.validation.json_schema import arguments_problem, schema_problem
from cowork_assets.validation.structure import find_structure_findings
from cowork_assets.validation.tasks import find_task_findings
from tests.helpers import call, flatten, result, trajectory

TOOL = [
    {"name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}
]


def _kinds(traj) -> list[tuple]:
    f = flatten(traj)
    found = find_structure_findings(
        "b", f["trajectories"], f["task_packages"], f["messages"], f["tool_calls"], "o200k_base"
    )
    return found.select("kind", "message_index").rows()


USER = {"role": "user", "content": "look it up"}
DONE = {"role": "assistant", "content": "done"}


def test_a_clean_sample_has_no_findings():
    assert _kinds(trajectory([USER, call("lookup", {"q": "x"}), result("ok"), DONE], tools=TOOL)) == []


@pytest.mark.parametrize(
    "messages, expected",
    [
        ([USER, call("lookup", {"q": "x"}), DONE], [("unanswered_call", 1)]),
        ([USER, result("ok", "c9"), DONE], [("orphan_result", 1), ("tool_message_out_of_order", 1)]),
        (
            [USER, call("lookup", {"q": "x"}, "c1"), result("ok", "c2"), DONE],
            [("unanswered_call", 1), ("orphan_result", 2), ("tool_message_out_of_order", 2)],
        ),
        (
            [
                USER,
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{q: x"}}
                    ],
                },
                result("ok"),
                DONE,
            ],
            [("invalid_arguments_json", 1)],
        ),
        ([USER, call("lookup", {"q": 7}), result("ok"), DONE], [("arguments_schema_mismatch", 1)]),
        ([USER, call("lookup", {"q": "x"}), USER, result("ok"), DONE], [("tool_message_out_of_order", 3)]),
        ([{"role": "assistant", "content": "hello"}, USER, DONE], [("does_not_start_with_user", 0)]),
        ([USER, call("lookup", {"q": "x"}), result("ok")], [("ends_on_tool_result", 2)]),
        ([USER, call("lookup", {"q": "x"})], [("unanswered_call", 1), ("does_not_end_with_assistant", 1)]),
        ([USER, DONE, {"role": "user", "content": "###STOP###"}], [("ends_on_user_turn", 2)]),
        ([USER, {"role": "assistant", "content": "  "}, DONE], [("empty_assistant_turn", 1)]),
        ([USER, {"role": "assistant", "content": "bell\x07 here"}], [("control_characters", 1)]),
        ([USER, {"role": "assistant", "content": "the end <|endoftext|> more"}], [("tokenizer_round_trip", 1)]),
    ],
)
def test_each_structural_defect_is_found(messages, expected):
    assert sorted(_kinds(trajectory(messages, tools=TOOL))) == sorted(expected)


@pytest.mark.parametrize(
    "category, tool, args",
    [
        ("swe_agent", "submit", {}),
        ("openhands", "finish", {"message": "done"}),
        ("atif", "finish", {}),
        ("atif", "mark_task_complete", {}),
        ("atif", "task_complete", {}),
        ("mini_swe_agent", "bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"}),
        ("mini_swe_agent", "bash", {"command": "  echo MINI_SWE_AGENT_FINAL_OUTPUT"}),
    ],
)
def test_a_run_may_end_on_its_harness_terminal_call_answered_or_not(category, tool, args):
    run = lambda messages: {**(t := trajectory(messages)), "task": {**t["task"], "category": category}}  # noqa: E731
    ends = [USER, call("lookup", {"q": "x"}), result("ok"), call(tool, args, "c2", content="Submitting.")]
    assert _kinds(run(ends)) == [("ends_on_terminal_call", 3)]  # its result was never written (ATIF, OpenHands)
    assert _kinds(run([*ends, result("diff --git a/x b/x", "c2")])) == [("ends_on_tool_result", 4)]
    # the same call anywhere but at the end is a call like any other, and another format's is not terminal
    assert ("unanswered_call", 3) in _kinds(run([*ends, DONE]))
    other = {**trajectory(ends), "task": {**trajectory(ends)["task"], "category": "tau2_retail"}}
    assert sorted(_kinds(other)) == [("does_not_end_with_assistant", 3), ("unanswered_call", 3)]


def test_arguments_are_checked_against_the_schema_with_where_and_why():
    params = orjson.dumps(
        {
            "type": "object",
            "properties": {
                "q": {"type": "string"},
                "page": {"type": "object", "properties": {"size": {"type": "integer", "maximum": 50}}},
            },
            "required": ["q"],
        }
    ).decode()
    assert arguments_problem(params, '{"q": "x", "page": {"size": 10}}') is None
    assert arguments_problem(params, '{"q": 7}') == 'q: 7 is not of type "string"'
    assert (
        arguments_problem(params, '{"q": "x", "page": {"size": 99}}')
        == "page/size: 99 is greater than the maximum of 50"
    )
    assert arguments_problem(params, "{}") == '<arguments>: "q" is a required property'
    # Decimal multiples hold (python-jsonschema's float division called 0.3 no multiple of 0.1).
    assert arguments_problem('{"type": "number", "multipleOf": 0.1}', "0.3") is None


def test_arguments_nested_too_deeply_to_quote_are_still_judged():
    deep = "[" * 600 + "]" * 600  # jsonschema-rs cannot render a message quoting this; it can still judge it
    assert (
        arguments_problem('{"type": "object"}', deep) == "<arguments>: nested too deeply to say where they do not fit"
    )
    assert arguments_problem('{"type": "array"}', deep) is None
    assert arguments_problem('{"type": "object"}', f'{{"a": {deep}}}') is None


@pytest.mark.parametrize(
    "schema, why",
    [
        ({"type": "objekt"}, "is not valid under any of the schemas"),
        ({"type": "string", "pattern": "("}, 'is not a "regex"'),
        ({"$ref": "#/$defs/missing"}, "does not exist"),
    ],
)
def test_a_schema_that_cannot_check_anything_is_a_task_problem_not_a_sample_one(schema, why):
    params = orjson.dumps(schema).decode()
    assert why in schema_problem(params)
    assert arguments_problem(params, '"anything"') is None


def test_schema_references_outside_the_schema_are_never_fetched(tmp_path):
    (tmp_path / "int.json").write_text('{"type": "integer"}')
    params = orjson.dumps({"$ref": (tmp_path / "int.json").as_uri()}).decode()
    assert "Retrieval is disabled" in schema_problem(params)


def test_default_data_has_no_structural_findings(pipeline):
    settings, _, _ = pipeline
    assert TABLES["structure_findings"].scan(settings.root).collect().height == 0


@pytest.mark.parametrize(
    "request_text, counts",
    [
        ("Add three todos for the launch: a; b; c.", {"todo": {3}}),
        ("Add 2 todos. Then: add 4 more todos", {"todo": {2, 4}}),
        ("Schedule a meeting at 10:30 on 2026-12-05.", {}),
    ],
)
def test_counts_in_requests(request_text, counts):
    assert requested_counts(request_text) == counts


@pytest.mark.parametrize("fake, real", [(fake, real) for real, (fake, _) in UNEXPOSED.items()])
def test_the_closest_exposed_tool_is_suggested(fake, real):
    tools = {t["name"]: t["endpoint"] for service in TOOLS.values() for t in service}
    assert suggest(fake, tools) == f"use {real} ({tools[real]})"


def _package(checks, tools=TOOL, request="r", state="{}"):
    return package_findings("task", "h", request, orjson.dumps(tools).decode(), orjson.dumps(checks).decode(), state)


def test_package_level_findings():
    bad_schema = [{"name": "lookup", "parameters": {"type": "objekt"}}]
    keyword = [{"id": "k", "type": "keywords_present", "keywords": ["done"]}]
    assert [f["kind"] for f in _package(keyword, tools=bad_schema)] == ["invalid_tool_schema"]
    assert [(f["kind"], f["severity"]) for f in _package([])] == [("no_checks", "warning")]
    unknown = _package([{"id": "v", "type": "vibes_match"}])
    assert [(f["kind"], f["severity"]) for f in unknown] == [("unknown_check_type", "warning")]
    assert (
        _package([{"id": "c", "type": "tool_called", "tool": "lookup", "min_calls": 3}], request="Run three lookups.")
        == []
    )
    mismatch = _package(
        [{"id": "c", "type": "tool_called", "tool": "lookup", "min_calls": 2}], request="Run three lookups."
    )
    assert [(f["kind"], f["check_id"], f["suggestion"]) for f in mismatch] == [
        ("count_mismatch", "c", "set min_calls to 3")
    ]


def test_unknown_references_are_ids_no_state_or_run_contains(tmp_path):
    from cowork_assets.store.models import polars_schema
    from cowork_assets.validation.schemas import Regrade
    from tests.helpers import flatten

    checks = [
        {"id": "a", "type": "tool_called", "tool": "lookup", "args": {"q": "ord_55501"}},
        {"id": "b", "type": "tool_called", "tool": "lookup", "args": {"q": "ord_55502"}},
        {"id": "c", "type": "tool_called", "tool": "lookup", "args": {"q": "ord_55503"}},
    ]
    traj = trajectory(
        [USER, call("lookup", {"q": "x"}), result('[{"id": "ord_55502"}]'), DONE], checks=checks, tools=TOOL
    )
    traj["task"]["initial_state"] = {"orders": [{"id": "ord_55501"}]}
    f = flatten(traj)
    regraded = pl.DataFrame(schema=polars_schema(Regrade)).lazy()
    found = find_task_findings([f["task_packages"]], [(f["trajectories"].lazy(), f["tool_calls"].lazy(), regraded)])
    assert found.select("kind", "check_id").rows() == [("unknown_reference", "c")]


def test_a_trajectory_id_in_two_batches_read_together_is_two_runs():
    """Small batches are checked a group at a time: a run is its batch and id, so the run of `b` that calls a tool
    its package does not expose is the one finding, not also `a`'s run of the same id."""
    from cowork_assets.store.models import polars_schema
    from cowork_assets.validation.schemas import Regrade

    a = flatten(trajectory([USER, call("lookup", {"q": "x"}), result("[]"), DONE], tools=TOOL), batch="a")
    b = flatten(trajectory([USER, call("delete", {"q": "x"}), result("[]"), DONE], tools=TOOL), batch="b")
    both = {name: pl.concat([a[name], b[name]]) for name in ("trajectories", "tool_calls")}
    regraded = pl.DataFrame(schema=polars_schema(Regrade)).lazy()
    found = find_task_findings(
        [a["task_packages"]], [(both["trajectories"].lazy(), both["tool_calls"].lazy(), regraded)]
    )
    assert found.filter(pl.col("trajectory_id").is_not_null()).select("kind", "batch", "detail").rows() == [
        ("unexposed_tool_call", "b", "calls delete, which the tool interface does not expose")
    ]


def test_task_findings_match_the_generator_labels_exactly(pipeline, labels):
    settings, _, _ = pipeline
    found = TABLES["task_findings"].read(settings.root)
    assert set(found["kind"]) == {
        "unexposed_tool_call",
        "unexposed_tool_in_check",
        "count_mismatch",
        "call_counting_grader",
    }  # nothing else is flagged
    by = lambda kind: found.filter(pl.col("kind") == kind)  # noqa: E731
    unexposed = [l for l in labels if l["kind"] == "unexposed_endpoint"]
    assert sorted(by("unexposed_tool_call").select("trajectory_id", "detail").rows()) == sorted(
        (l["trajectory_id"], f"calls {l['called']}, which the tool interface does not expose") for l in unexposed
    )
    assert set(by("unexposed_tool_call")["suggestion"]) == {
        f"use {l['exposed']} ({l['exposed_endpoint']})" for l in unexposed
    }
    assert set(by("unexposed_tool_in_check")["task_id"]) == {l["task_id"] for l in unexposed}
    mismatches = {(l["task_id"], l["check_id"]) for l in labels if l["kind"] == "count_mismatch"}
    assert sorted(by("count_mismatch").select("task_id", "check_id").rows()) == sorted(mismatches)
    dup = [l for l in labels if l["kind"] == "duplicate_creations"]
    assert (
        sorted(by("call_counting_grader").select("trajectory_id", "check_id").rows())
        == sorted((l["trajectory_id"], l["check_id"]) for l in dup)
        and dup
    )


def test_finding_texts_read_as_sentences():
    from cowork_assets.validation.structure import order_findings

    frame = pl.DataFrame(
        {
            "trajectory_id": ["t"] * 3,
            "message_index": [0, 1, 2],
            "role": ["assistant", "user", "tool"],
            "content": ["hi", "q", "r"],
            "tool_calls": [[], [], []],
            "tool_call_id": [None, None, "c"],
        },
        schema_overrides={"message_index": pl.Int32, "tool_calls": pl.List(TOOL_CALL)},
    )
    no_terminal_calls = pl.DataFrame(
        schema={"trajectory_id": pl.String, "message_index": pl.Int32, "call_index": pl.Int32}
    )
    details = {
        f["kind"]: f["detail"] for f in pl.concat(order_findings(frame, no_terminal_calls)).iter_rows(named=True)
    }
    assert details["does_not_start_with_user"] == (
        "does not start with a user message: the first message after the system prompt is from the assistant"
    )
    assert details["ends_on_tool_result"] == (
        "tool results follow the last assistant turn: the SFT sample ends at the last assistant turn"
    )
    pending = frame.head(2).with_columns(
        role=pl.Series(["user", "assistant"]),
        tool_calls=pl.Series(
            [[], [{"id": "c", "type": "function", "name": "ls", "arguments": "{}"}]], dtype=pl.List(TOOL_CALL)
        ),
    )
    details = {
        f["kind"]: f["detail"] for f in pl.concat(order_findings(pending, no_terminal_calls)).iter_rows(named=True)
    }
    assert details["does_not_end_with_assistant"] == (
        "does not end with an assistant message: it ends on a assistant message with pending tool calls"
    )
