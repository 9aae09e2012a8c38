"""Real coding-agent runs (the in-repo sample tests/realdata/coding: SWE-agent, mini-swe-agent, OpenHands, Harbor
ATIF) through the whole pipeline with their default budgets, accepted ungraded: every run reaches the SFT dataset,
ends on an assistant turn and renders through the chat templates; the coding tasks become sandbox RL rows."""

from __future__ import annotations

import json
import re
import shutil

import orjson
import polars as pl
import pytest

from cowork_assets.store.storage import plain
from cowork_assets.trainers import for_chat_template
from tests.conftest import TESTS
from tests.test_rewards import render

SAMPLE = TESTS / "realdata" / "coding"


@pytest.fixture(scope="module")
def coding(tmp_path_factory):
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    base = tmp_path_factory.mktemp("coding")
    shutil.copytree(SAMPLE, base / "raw" / "coding")
    settings = CurateSettings(raw_root=str(base / "raw"), data_root=str(base / "curated"), accept_ungraded=True)
    outcome = materialize_all(settings, ensure_instance(base / "home"), echo=lambda _: None)
    assert outcome.failed == {}
    return settings


def _published(settings, dataset: str) -> pl.DataFrame:
    return plain(pl.read_parquet(settings.local_root / "published" / dataset / "current" / "*.parquet"))


def _table(settings, name: str) -> pl.DataFrame:
    return pl.read_parquet(settings.local_root / "tables" / name / "batch=*" / "data.parquet")


def test_every_coding_run_reaches_sft_ending_on_an_assistant_turn(coding):
    runs = _table(coding, "trajectories")
    sft = _published(coding, "sft_dataset")
    assert runs.height == 9 and sorted(sft["sample_id"]) == sorted(runs["trajectory_id"])
    assert sorted(runs["category"].unique()) == ["atif", "mini_swe_agent", "openhands", "swe_agent"]
    for sample_id, messages, tools in sft.select("sample_id", "messages", "tools").iter_rows():
        assert messages[-1]["role"] == "assistant", sample_id
        chat, tool_list = for_chat_template(messages, tools)
        qwen = render("qwen2.5.jinja", chat, tool_list)
        assert qwen.rsplit("<|im_start|>", 1)[1].startswith("assistant"), sample_id
        for block in re.findall(r"<tool_call>\n(.*?)\n</tool_call>", qwen.split("<|im_end|>", 1)[1], re.S):
            assert isinstance(json.loads(block)["arguments"], dict), sample_id
        llama = render("llama3.1.jinja", chat, tool_list)
        assert re.findall(r"<\|start_header_id\|>(\w+)<\|end_header_id\|>", llama)[-1] == "assistant", sample_id


def test_runs_end_where_their_harness_ends_them(coding):
    findings = _table(coding, "structure_findings")
    assert findings.filter(pl.col("severity") == "error").is_empty()
    ends = dict(findings.filter(pl.col("kind").str.starts_with("ends_on_")).select("trajectory_id", "kind").rows())
    assert ends == {
        "NORMALIZED_SESSION_ID": "ends_on_terminal_call",  # ATIF (OpenHands): a finish call with no result
        "NORMALIZED_SESSION_ID@harbor_golden_terminus2_hello-world-invalid-json.trajectory.json": "ends_on_tool_result",
        "harbor_rfc_mini-swe-agent-trajectory": "ends_on_tool_result",  # the output of its submit command
        "minisweagent_github_issue": "ends_on_tool_result",
        "minisweagent_local": "ends_on_tool_result",
        "openhands_multiswebench_examples_output:ponylang__ponyc-4588": "ends_on_tool_result",  # iterations ran out
        "openhands_multiswebench_examples_output:ponylang__ponyc-4593": "ends_on_terminal_call",  # its finish call
        "openhands_multiswebench_examples_output:ponylang__ponyc-4595": "ends_on_terminal_call",
        "sweagent_demo_marshmallow-1867_function_calling_replace": "ends_on_tool_result",  # submit's patch
    }
    sft = _published(coding, "sft_dataset")
    finish = sft.filter(pl.col("sample_id") == "NORMALIZED_SESSION_ID")["messages"][0][-1]
    assert [c["function"]["name"] for c in finish["tool_calls"]] == ["finish"]  # kept as the run's last action


def test_coding_tasks_are_sandbox_rl_rows_with_what_the_logs_carry(coding):
    rl = _published(coding, "rl_tasks").unnest("reward_model").unnest("extra_info")
    rows = {t: json.loads(g) for t, s, g in rl.select("task_id", "style", "ground_truth").iter_rows() if s == "sandbox"}
    assert sorted(rows) == [
        "marshmallow-code__marshmallow-1867",
        "ponylang__ponyc-4588",
        "ponylang__ponyc-4593",
        "ponylang__ponyc-4595",
    ]
    assert rows["ponylang__ponyc-4593"]["repo"] == "ponylang/ponyc" and rows["ponylang__ponyc-4593"]["base_commit"]
    assert rows["marshmallow-code__marshmallow-1867"]["base_commit"] == "bfd2593d4b416122e30cdefe0c72d322ef471611"
    assert rows["marshmallow-code__marshmallow-1867"]["problem_statement"].startswith("TimeDelta serialization")
    # ATIF toy tasks have nothing to grade by; the mini-swe-agent runs name no repository or image a sandbox could
    # rebuild: left out, with the reason
    excluded = pl.read_parquet(coding.local_root / "tables" / "exclusions" / "bucket=*" / "data.parquet").filter(
        pl.col("dataset") == "rl_tasks"
    )
    assert sorted(excluded.select("task_id", "reason").rows()) == [
        ("atif-2a753a51dba6", "no_checks"),
        ("atif-eb5f42fef12d", "no_checks"),
        ("harbor_rfc_mini-swe-agent-trajectory", "no_sandbox"),
        ("minisweagent_github_issue", "no_sandbox"),
        ("minisweagent_local", "no_sandbox"),
    ]


def test_a_sandbox_is_found_however_the_raw_task_spells_its_key():
    """The RL tasks and the task findings parse only the stored states whose text holds `"sandbox"`: that holds
    because ingest stores a state as compact JSON, keys as they are, whatever the raw line's spacing and escapes."""
    from cowork_assets.datasets.rl import _sandbox
    from cowork_assets.ingest.flatten import TaskPackages
    from cowork_assets.validation.consistency import sandbox_of

    spelled = (  # spaced, and the key with an escape
        '{"task_id": "t", "category": "coding", "request": "fix it",\n'
        ' "initial_state": {"sand\\u0062ox": {"repo": "a/b"}}}'
    )
    plain_state = (
        '{"task_id": "u", "category": "coding", "request": "fix it", "initial_state": {"other": {"repo": "a/b"}}}'
    )
    _, packages = TaskPackages()(pl.Series([spelled, plain_state]))
    states = packages["initial_state"]
    assert [sandbox_of(s) for s in states] == [{"repo": "a/b"}, None]
    assert _sandbox(states).to_list() == ['{"repo":"a/b"}', None]


def test_the_card_shows_the_coding_budgets_and_the_terminal_text_it_cleaned(coding):
    folder = coding.local_root / "published" / "sft_dataset" / "current"
    card = orjson.loads((folder / "card.json").read_bytes())
    assert {b["category"]: (b["char_budget"], b["token_budget"]) for b in card["budgets"]} == {
        c: (262_144, 65_536) for c in ("atif", "mini_swe_agent", "openhands", "swe_agent")
    }
    curated = _table(coding, "curated_messages")
    cleaned = curated.filter(pl.col("terminal_chars") > 0)
    assert card["terminal_text"] == {"messages": cleaned.height, "chars": int(cleaned["terminal_chars"].sum())}
    observations = curated.filter(pl.col("role") == "tool")["content"].fill_null("")
    assert cleaned.height > 0 and not observations.str.contains("\r").any()


def test_the_swe_agent_edit_is_located_at_its_line_and_lost_under_head_at_500(coding):
    from cowork_assets.curation.curate import curate_chunk
    from cowork_assets.settings import CurationSettings

    evidence = pl.read_parquet(coding.local_root / "tables" / "evidence" / "batch=*" / "data.parquet")
    tid = "sweagent_demo_marshmallow-1867_function_calling_replace"
    edits = evidence.filter(pl.col("trajectory_id") == tid, pl.col("source") == "edit")
    assert sorted(edits["value"]) == ["1474", "return int(value.total_seconds() / base_unit.total_seconds())"]
    opened = edits.filter(pl.col("value") == "1474").row(0, named=True)  # `open fields.py 1474`: a guess, seen nowhere
    assert (opened["norm"], opened["used_at"], opened["status"]) == ("line 1474", 12, "produced")
    edit = edits.filter(pl.col("used_at") == 14).row(0, named=True)
    assert (edit["value"], edit["used_at"], edit["status"]) == (
        "return int(value.total_seconds() / base_unit.total_seconds())",
        14,  # the first edit of fields.py
        "at_risk",
    )
    # shown in the `open` window (`1475:        return int(...)`), 737 characters into its 4,222
    assert (edit["found_at"], edit["found_offset"], edit["found_message_chars"]) == (13, 737, 4222)
    messages = _table(coding, "messages").filter(pl.col("trajectory_id") == tid)
    window = messages.filter(pl.col("message_index") == 13)["content"][0]
    assert window[edit["found_offset"] :].startswith(edit["value"])
    assert window[: edit["found_offset"]].endswith("\r\n1475:        ")
    runs = _table(coding, "trajectories").filter(pl.col("trajectory_id") == tid)
    lost = {}
    for strategy in ("head", "evidence_aware"):
        out = curate_chunk(
            "coding",
            runs,
            messages,
            evidence.filter(pl.col("trajectory_id") == tid),
            CurationSettings(truncation_strategy=strategy, max_observation_chars=500),
        )
        audit = out["evidence_audit"].filter(pl.col("source") == "edit", pl.col("used_at") == 14)
        lost[strategy] = audit["lost_to_truncation"].to_list()
    assert lost == {"head": [True], "evidence_aware": [False]}
