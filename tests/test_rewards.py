"""Rewards from transcripts, the re-grade audit, the truncation sweep and chat templates, on hand-made cases
with hand-computed values."""

import jinja2
import orjson
import polars as pl
import pytest

from cowork_assets.curation.sweep import recommendation, sweep
from cowork_assets.rewards import compute_score, parse_response, score
from cowork_assets.trainers import for_chat_template
from cowork_assets.validation.regrade import agreement, replay_grades
from tests.conftest import TESTS

TEMPLATES = TESTS / "templates"


def render(template: str, messages: list[dict], tools: list[dict] | None = None, **extra) -> str:
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "sort_keys": False}
    return env.from_string((TEMPLATES / template).read_text()).render(
        messages=messages, tools=tools, bos_token="", **extra
    )


def call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": orjson.dumps(args).decode()}}


CHECKS = [
    {"id": "sent", "type": "tool_called", "tool": "send", "args": {"to": "c_42"}, "weight": 2.0},
    {"id": "todos", "type": "distinct_items", "tool": "todo", "key": "title", "expected": 3},
    {"id": "told", "type": "keywords_present", "keywords": ["REF-9"]},
    {"id": "db", "type": "db_match"},
]
CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Text c_42, add three todos, give me the ref."},
    {"role": "assistant", "content": None, "tool_calls": [call("1", "send", {"to": "c_42"})]},
    {"role": "tool", "tool_call_id": "1", "content": "sent"},
    {
        "role": "assistant",
        "content": "Adding.",
        "tool_calls": [
            call("2", "todo", {"title": "A"}),
            call("3", "todo", {"title": "a"}),
            call("4", "todo", {"title": "B"}),
        ],
    },
    {"role": "tool", "tool_call_id": "2", "content": "ok"},
    {"role": "tool", "tool_call_id": "3", "content": "ok"},
    {"role": "tool", "tool_call_id": "4", "content": "ok"},
    {"role": "assistant", "content": "Done: ref REF-9."},
]


def test_score_replays_the_checks_with_their_weights():
    result = score(CONVERSATION, CHECKS)
    assert [(c["check_id"], c["met"], c["first_turn"]) for c in result.checks] == [
        ("sent", True, 1),
        ("todos", False, None),
        ("told", True, 3),
        ("db", None, None),
    ]  # two distinct titles of 3
    assert result.reward == pytest.approx((2 + 0 + 1) / 4) and result.passed is False  # db is not decidable
    only_db = score(CONVERSATION, [CHECKS[3]])
    assert (only_db.reward, only_db.passed) == (0.0, None)
    informational = score(CONVERSATION, [{**CHECKS[0], "weight": 0.0}, CHECKS[2]])
    assert [c["met"] for c in informational.checks] == [True, True]  # replayed and reported ...
    assert (informational.reward, informational.passed) == (1.0, True)  # ... but a weight-0 check is not counted
    unmet = score(CONVERSATION, [{**CHECKS[1], "weight": 0.0}, CHECKS[2]])
    assert (unmet.reward, unmet.passed) == (1.0, True)  # its failure costs nothing
    assert score(CONVERSATION, [{**CHECKS[0], "weight": 0.0}]).passed is None  # nothing counted: undecided


@pytest.mark.parametrize(
    "template, skip_special", [("qwen2.5.jinja", True), ("qwen2.5.jinja", False), ("llama3.1.jinja", False)]
)
def test_compute_score_reads_a_rollout_as_verl_hands_it_over(template, skip_special):
    messages, tools = for_chat_template(CONVERSATION, "[]")
    prompt = render(template, messages[:2], tools, add_generation_prompt=True)
    text = render(template, messages, tools)
    assert text.startswith(prompt)
    response = text[len(prompt) :]
    if skip_special:  # verl decodes the response with skip_special_tokens=True
        response = response.replace("<|im_start|>", "").replace("<|im_end|>", "")
    ground_truth = orjson.dumps(CHECKS).decode()
    assert compute_score("cowork", response, ground_truth) == score(CONVERSATION, CHECKS).reward == 0.75
    assert compute_score("cowork", "", ground_truth, {"messages": CONVERSATION}) == 0.75
    assert [t[1] for t in parse_response(response)][0] == [("send", '{"to": "c_42"}', True)]


def _runs(**grades):
    return pl.DataFrame(
        [
            {
                "trajectory_id": tid,
                "task_id": "t",
                "category": "c",
                "task_hash": "h",
                "grade_score": None if p is None else float(p),
                "grade_passed": p,
                "grade_checks": orjson.dumps(checks).decode(),
            }
            for tid, (p, checks) in grades.items()
        ]
    )


def _messages(conversations: dict[str, list[dict]]) -> pl.DataFrame:
    rows = [
        {
            "trajectory_id": tid,
            "message_index": i,
            "role": m["role"],
            "content": m.get("content"),
            "tool_call_id": m.get("tool_call_id"),
            "tool_calls": [
                {
                    "id": c["id"],
                    "type": "function",
                    "name": c["function"]["name"],
                    "arguments": c["function"]["arguments"],
                }
                for c in m.get("tool_calls") or []
            ],
        }
        for tid, ms in conversations.items()
        for i, m in enumerate(ms)
    ]
    return pl.DataFrame(rows, schema_overrides={"message_index": pl.Int32})


def _package(checks: list[dict], task_hash: str = "h", category: str = "c") -> pl.DataFrame:
    return pl.DataFrame({"task_hash": [task_hash], "category": [category], "checks": [orjson.dumps(checks).decode()]})


def test_regrade_names_why_a_verdict_differs():
    duplicate = CONVERSATION  # three creation calls, two distinct titles ("A" and "a" are one)
    runs = _runs(
        counted=(True, {"todos": True}),
        clean=(True, {}),
        db_failed=(False, {"db": False}),
        fine=(False, {}),
        ungraded=(None, {}),
    )
    good = [
        *CONVERSATION[:8],
        {"role": "assistant", "content": None, "tool_calls": [call("9", "todo", {"title": "C"})]},
        {"role": "tool", "tool_call_id": "9", "content": "ok"},
        CONVERSATION[-1],
    ]
    silent = [*good[:-1], {"role": "assistant", "content": "Done."}]
    messages = _messages({"counted": duplicate, "clean": silent, "db_failed": good, "fine": good, "ungraded": good})
    found = replay_grades("b", [(runs, messages)], _package(CHECKS)).sort("trajectory_id")
    assert found.select(
        "trajectory_id", "recorded_passed", "regraded_passed", "regraded_score", "disagreement", "disagreement_detail"
    ).rows() == [
        ("clean", True, False, 0.75, "output not found", "told (keywords_present): ['REF-9']"),
        (
            "counted",
            True,
            False,
            0.75,
            "grader counts calls",
            "todos: 3 todo calls, fewer than 3 distinct title values",
        ),
        ("db_failed", False, True, 1.0, "undecided check failed", "db (db_match)"),
        (
            "fine",
            False,
            True,
            1.0,
            "failure without check results",
            "the benchmark recorded a failure and no check's result: the run ended in an error "
            "(tau-bench: reward_info null; tau2: termination agent_error)",
        ),
        ("ungraded", None, True, 1.0, None, None),
    ]
    assert found.filter(pl.col("trajectory_id") == "counted")["checks"][0][1] == {
        "check_id": "todos",
        "type": "distinct_items",
        "weight": 1.0,
        "decidable": True,
        "recorded": True,
        "met": False,
        "first_turn": None,
    }
    assert agreement(found) == {
        "compared": 4,
        "agree": 0,
        "rate": 0.0,
        "untrusted": 0,
        "reasons": [
            ("failure without check results", 1, ["fine"]),
            ("grader counts calls", 1, ["counted"]),
            ("output not found", 1, ["clean"]),
            ("undecided check failed", 1, ["db_failed"]),
        ],
    }


def test_each_check_type_explains_its_own_disagreements_in_rank_order():
    more = [
        {"role": "assistant", "content": None, "tool_calls": [call("9", "todo", {"title": "C"})]},
        {"role": "tool", "tool_call_id": "9", "content": "ok"},
    ]
    good = [*CONVERSATION[:8], *more, CONVERSATION[-1]]  # three distinct todos
    no_send = [*good[:2], *good[4:]]
    two_todos = [m for m in CONVERSATION if m.get("tool_call_id") != "3"]
    two_todos[4] = {**two_todos[4], "tool_calls": two_todos[4]["tool_calls"][::2]}
    runs = _runs(
        unsent=(True, {}),
        unsent_untold=(True, {}),
        short=(True, {}),
        call_contradicted=(False, {"sent": False}),
        output_contradicted=(False, {"told": False}),
    )
    untold = [*no_send[:-1], {"role": "assistant", "content": "Done."}]
    conversations = {"unsent": no_send, "unsent_untold": untold, "short": two_todos}
    messages = _messages(conversations | {"call_contradicted": good, "output_contradicted": good})
    found = replay_grades("b", [(runs, messages)], _package(CHECKS)).sort("trajectory_id")
    assert found.select("trajectory_id", "disagreement", "disagreement_detail").rows() == [
        ("call_contradicted", "recorded call missing", "sent (tool_called)"),
        ("output_contradicted", "recorded output missing", "told (keywords_present)"),
        ("short", "replay misses a check", "todos (distinct_items)"),  # 2 calls for 3 items: nothing to explain
        ("unsent", "reference call not made", "sent (tool_called)"),
        ("unsent_untold", "output not found", "told (keywords_present): ['REF-9']"),  # keywords rank first
    ]


def test_a_new_check_type_explains_its_disagreements_from_its_own_module(monkeypatch):
    from cowork_assets import check_types
    from cowork_assets.check_types._base import CheckType

    class LongAnswer(CheckType):
        name, per_turn, rank = "long_answer", True, 1

        def on_turn(self, check, state, turn):
            return len(turn.content) >= check["chars"]

        def why_unmet(self, unmet, calls_seen):
            return "answer too short", ", ".join(f"{u.label} wants {u.check['chars']}" for u in unmet)

    known = check_types.types()
    monkeypatch.setattr(check_types, "types", lambda: {**known, "long_answer": LongAnswer()})
    checks = [*CHECKS, {"id": "long", "type": "long_answer", "chars": 500}]
    found = replay_grades("b", [(_runs(r=(True, {})), _messages({"r": CONVERSATION}))], _package(checks))
    assert found.select("disagreement", "disagreement_detail").row(0) == (
        "answer too short",
        "long (long_answer) wants 500",
    )  # before distinct_items' own explanation of the same run: it ranks first


def test_the_sweep_cuts_by_position_as_verl_does_and_recommends_the_smallest_allowance():
    observation = "x" * 1500 + "ORD-123456" + "y" * 1490  # 3000 characters, the id at 1500
    messages = pl.DataFrame(
        {
            "trajectory_id": ["t"] * 4,
            "message_index": [0, 1, 2, 3],
            "role": ["user", "assistant", "tool", "assistant"],
            "content": ["find it", None, observation, "ORD-123456"],
        },
        schema_overrides={"message_index": pl.Int32},
    )
    evidence = pl.DataFrame(
        {
            "trajectory_id": ["t", "t"],
            "check_id": ["a", "b"],
            "norm": ["ord-123456", "ord-123456"],
            "status": ["at_risk", "at_risk"],
            "found_at": [2, 2],
            "found_offset": [1500, 1500],
            "found_length": [10, 10],
            "shown_at": [[{"message_index": 2, "offset": 1500, "length": 10}]] * 2,
        },
        schema_overrides={
            "found_at": pl.Int32,
            "shown_at": pl.List(pl.Struct({"message_index": pl.Int32, "offset": pl.Int64, "length": pl.Int64})),
        },
    )
    runs = pl.DataFrame({"trajectory_id": ["t"], "category": ["c"]})
    found = sweep(runs, messages, evidence, evidence_context_chars=60, allowances=(1000, 2000, 4000))
    lost = {(s, n): lost for s, n, lost in found.select("strategy", "max_observation_chars", "lost_items").rows()}
    assert lost == {
        ("head", 1000): 2,
        ("head", 2000): 0,
        ("head", 4000): 0,  # two checks share the value
        ("tail", 1000): 2,
        ("tail", 2000): 0,
        ("tail", 4000): 0,  # the last 2000 start at 1000
        ("middle", 1000): 2,
        ("middle", 2000): 2,
        ("middle", 4000): 0,  # [0, 1000) and [2000, 3000)
        ("evidence_aware", 1000): 0,
        ("evidence_aware", 2000): 0,
        ("evidence_aware", 4000): 0,
    }
    assert set(found.filter(pl.col("max_observation_chars") == 1000)["kept_chars"]) == {1000}
    assert set(found.filter(pl.col("max_observation_chars") == 4000)["kept_chars"]) == {3000}
    assert recommendation(found) == [
        "tool_response_truncate_side=left: max_tool_response_length=2000 keeps 100.0% of 2 at-risk evidence items",
        "tool_response_truncate_side=middle: max_tool_response_length=4000 keeps 100.0% of 2 at-risk evidence items",
        "tool_response_truncate_side=right: max_tool_response_length=2000 keeps 100.0% of 2 at-risk evidence items",
    ]  # in the registry's order: head, middle, tail


def test_rewards_import_without_dagster():
    import subprocess
    import sys

    code = "import sys, cowork_assets.rewards; print('dagster' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_keywords_match_as_evidence_does_or_as_tau_bench_compares_them():
    said = [{"role": "assistant", "content": "The refund of $1,093.34 is on card ORD-77001."}]
    for keyword in ("1093.34", "1,093.34", "ord-77001"):  # grouping and case do not matter
        assert score(said, [{"id": "k", "type": "keywords_present", "keywords": [keyword]}]).passed is True
    tau = {"id": "o", "type": "keywords_present", "keywords": ["ORD-770"], "normalize": "tau_bench"}
    assert score(said, [tau]).passed is True  # tau-bench: a substring of the lower-cased text without commas
    assert score(said, [{**tau, "normalize": None}]).passed is False  # evidence matching: whole tokens only


def test_compute_score_loads_by_file_path_without_being_registered_as_a_module():
    """verl's `load_module` for a file path: a spec from the file, executed, never put in `sys.modules` (a dataclass
    under `from __future__ import annotations` then fails to build)."""
    import importlib.util
    import sys

    import cowork_assets.rewards

    spec = importlib.util.spec_from_file_location("custom_module_rewards", cowork_assets.rewards.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "custom_module_rewards" not in sys.modules
    messages = [{"role": "assistant", "content": "REF-9", "tool_calls": [call("c1", "send", {"to": "c_42"})]}]
    assert module.compute_score("cowork", "", CHECKS, {"messages": messages}) == cowork_assets.rewards.compute_score(
        "cowork", "", CHECKS, {"messages": messages}
    )
