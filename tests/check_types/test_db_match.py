"""The end-state check (`checks/db_match.py`): a run meets it when its successful writes reach the reference's
state. One hand-made run per rule, with exact verdicts; `compute_score` gives the same on every one."""

import orjson
import pytest

from cowork_assets.check_types.db_match import DEFAULT_RULES, StateRules, state_check
from cowork_assets.rewards import compute_score, score

TOOLS = [
    {"name": "get_order", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}},
    {
        "name": "cancel_order",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}, "reason": {"enum": ["no longer needed", "by mistake"]}},
        },
    },
    {"name": "exchange_items", "parameters": {"type": "object", "properties": {}}},
    {"name": "refund", "parameters": {"type": "object", "properties": {}}},
    {"name": "book", "parameters": {"type": "object", "properties": {}}},
    {"name": "note_order", "parameters": {"type": "object", "properties": {"note": {"type": "string"}}}},
    {"name": "transfer_to_human_agents", "parameters": {"type": "object", "properties": {"summary": {}}}},
]


def check(*actions, match="exact", rules=DEFAULT_RULES):
    return state_check("db", list(actions), TOOLS, rules, match)


def run(*calls):
    """A conversation: each call (tool, arguments, result) in its own assistant turn, answered by a tool message."""
    messages = [{"role": "user", "content": "help"}]
    for i, (tool, args, result) in enumerate(calls):
        fn = {"name": tool, "arguments": orjson.dumps(args).decode()}
        messages.append(
            {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": fn}]}
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": result})
    return messages + [{"role": "assistant", "content": "Done."}]


def met(checks: dict | list, messages) -> bool | None:
    checks = checks if isinstance(checks, list) else [checks]
    verdict = score(messages, checks).passed
    assert (
        compute_score("tau", "", orjson.dumps(checks).decode(), {"messages": messages})
        == score(messages, checks).reward
    )  # the RL reward is the same replay
    return verdict


CANCEL = ("cancel_order", {"order_id": "#W1", "reason": "by mistake"})


def test_the_check_lists_the_reference_writes_and_the_read_only_tools():
    built = check(("get_order", {"order_id": "#W1"}), CANCEL, ("transfer_to_human_agents", {"summary": "bye"}))
    assert built == {
        "id": "db",
        "type": "db_match",
        "match": "exact",
        "writes": [{"tool": "cancel_order", "args": {"order_id": "#W1", "reason": "by mistake"}}],
        "read_only": ["get_order", "transfer_to_human_agents"],
    }
    assert state_check("db", None, TOOLS, StateRules())["type"] == "db_match"  # unknown reference: no writes ...
    assert met(state_check("db", None, TOOLS, StateRules()), run()) is None  # ... so not decidable


def test_a_reference_read_is_not_required_and_its_tool_called_check_costs_nothing():
    reference = [("get_order", {"order_id": "#W1"}), CANCEL]
    checks = [
        {"id": "action_0", "type": "tool_called", "tool": "get_order", "args": {"order_id": "#W1"}, "weight": 0.0},
        check(*reference),
    ]
    found_another_way = run(("cancel_order", {"order_id": "#W1", "reason": "by mistake"}, "cancelled"))
    result = score(found_another_way, checks)
    assert [(c["check_id"], c["met"]) for c in result.checks] == [("action_0", False), ("db", True)]
    assert (result.passed, result.reward) == (True, 1.0)
    assert met(checks, found_another_way) is True
    read_too = run(("get_order", {"order_id": "#W2"}, "{...}"), *[(t, a, "ok") for t, a in [CANCEL]])
    assert met(check(*reference), read_too) is True  # a read of another record is no extra write


def test_list_arguments_are_multisets_and_a_self_mapped_item_changes_nothing():
    reference = check(("exchange_items", {"order_id": "#W1", "item_ids": ["a", "b"], "new_item_ids": ["c", "d"]}))
    reordered = {"order_id": "#W1", "item_ids": ["b", "a"], "new_item_ids": ["d", "c"]}
    assert met(reference, run(("exchange_items", reordered, "ok"))) is True
    with_self_map = {"order_id": "#W1", "item_ids": ["a", "x", "b"], "new_item_ids": ["c", "x", "d"]}
    assert met(reference, run(("exchange_items", with_self_map, "ok"))) is True
    other_item = {"order_id": "#W1", "item_ids": ["a", "b"], "new_item_ids": ["c", "e"]}
    assert met(reference, run(("exchange_items", other_item, "ok"))) is False


def test_numbers_by_value_and_keys_the_tool_ignores_inside_objects():
    reference = check(("book", {"flights": [{"number": "HAT1", "date": "2024-05-01"}], "bags": 2}))
    extra_keys = {"flights": [{"number": "HAT1", "date": "2024-05-01", "origin": "EWR"}], "bags": 2.0}
    assert met(reference, run(("book", extra_keys, "ok"))) is True
    other_date = {"flights": [{"number": "HAT1", "date": "2024-05-02"}], "bags": 2}
    assert met(reference, run(("book", other_date, "ok"))) is False


def test_free_text_is_not_compared_unless_the_schema_makes_it_a_choice():
    assert (
        met(
            check(("note_order", {"order_id": "#W1", "note": "ship fast"})),
            run(("note_order", {"order_id": "#W1", "note": "please hurry"}, "ok")),
        )
        is True
    )
    other_reason = {"order_id": "#W1", "reason": "no longer needed"}  # `reason` is free text unless an enum
    assert met(check(CANCEL), run(("cancel_order", other_reason, "cancelled"))) is False
    rules = StateRules(state_changing_tools=("transfer_to_human_agents",))  # a hand-off that writes, summary free
    reference = check(("transfer_to_human_agents", {"summary": "user wants a refund"}), rules=rules)
    assert met(reference, run(("transfer_to_human_agents", {"summary": "refund, please"}, "ok"))) is True


def test_a_call_whose_result_is_an_error_changed_nothing():
    failed_extra = run(
        (*CANCEL, "cancelled"), ("cancel_order", {"order_id": "#W2", "reason": "by mistake"}, "Error: no")
    )
    assert met(check(CANCEL), failed_extra) is True
    note = ("note_order", {"order_id": "#W1", "note": "x"})
    failed_after_a_write = run((*note, "ok"), (*CANCEL, "Error: order #W1 is not pending"))
    assert met(check(note, CANCEL), failed_after_a_write) is False
    synthetic_style = run((*note, "ok"), (*CANCEL, '{"error": "unknown order"}'))
    assert met(check(note, CANCEL), synthetic_style) is False


def test_an_extra_write_fails_a_database_but_not_environment_assertions():
    extra = run((*CANCEL, "cancelled"), ("cancel_order", {"order_id": "#W2", "reason": "by mistake"}, "cancelled"))
    assert met(check(CANCEL), extra) is False
    assert met(check(CANCEL, match="includes"), extra) is True
    assert met(check(), run()) is True  # nothing to write, nothing written
    assert met(check(), extra) is False


def test_a_reference_write_the_environment_rejects_from_the_start_is_not_required():
    paypal, card = (
        ("refund", {"order_id": "#W1", "method": "paypal"}),
        ("refund", {"order_id": "#W1", "method": "card"}),
    )
    reference = check(paypal, card)  # tau-bench's reference tries paypal (refused), then the card
    rejected_first = run((*paypal, "Error: payment method should be the original one"), (*card, "refunded"))
    assert met(reference, rejected_first) is True
    rejected_after_a_write = run((*card, "refunded"), (*paypal, "Error: already refunded"))
    assert met(reference, rejected_after_a_write) is False  # its own write may be why: not evidence


def test_which_tools_are_read_only():
    rules = StateRules()
    assert [rules.is_read_only(n) for n in ("get_order", "findUser", "list_all", "calculate", "think")] == [True] * 5
    assert [rules.is_read_only(n) for n in ("cancel_order", "run_speed_test", "transfer_money")] == [False] * 3
    assert rules.is_read_only("transfer_to_human_agents")  # the read_only_tools default
    assert rules.is_read_only("lookup", {"annotations": {"readOnlyHint": False}}) is False  # the definition says so
    assert rules.is_read_only("contacts_send", {"endpoint": "GET /contacts"}) is True
    assert rules.is_read_only("get_x", {"endpoint": "POST /x"}) is False
    overridden = StateRules(read_only_tools=("run_speed_test",), state_changing_tools=("get_and_reset",))
    assert (overridden.is_read_only("run_speed_test"), overridden.is_read_only("get_and_reset")) == (True, False)


@pytest.mark.parametrize("template", ["qwen2.5.jinja", "llama3.1.jinja"])
def test_compute_score_reads_failed_calls_from_a_decoded_rollout(template):
    from cowork_assets.trainers import for_chat_template
    from tests.test_rewards import render

    note = ("note_order", {"order_id": "#W1", "note": "x"})
    ground_truth = orjson.dumps([check(note, CANCEL)]).decode()
    for cancelled, reward in (("Error: not pending", 0.0), ("cancelled", 1.0)):  # a failed cancel changed nothing
        messages, tools = for_chat_template(run((*note, "ok"), (*CANCEL, cancelled)), "[]")
        prompt = render(template, messages[:1], tools, add_generation_prompt=True)
        response = render(template, messages, tools)[len(prompt) :]
        assert compute_score("tau", response, ground_truth) == reward
