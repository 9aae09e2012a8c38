"""The shared real runs (tau2-bench, SWE-agent, mini-swe-agent, OpenHands) through the whole pipeline.
Skipped when ../shared/realdata is absent."""

import json
import re
import shutil

import polars as pl
import pytest

from cowork_assets.store.registry import TABLES
from tests.conftest import SHARED

REAL = SHARED / "realdata"
pytestmark = pytest.mark.skipif(not (REAL / "tau2").is_dir(), reason="../shared/realdata is absent")
ALLOWANCE = 1000


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    base = tmp_path_factory.mktemp("real")
    for batch in ("tau2", "coding", "tau_bench"):
        shutil.copytree(REAL / batch, base / "raw" / batch)
    settings = CurateSettings(raw_root=str(base / "raw"), data_root=str(base / "curated"), accept_ungraded=True)
    outcome = materialize_all(settings, ensure_instance(base / "home"), echo=lambda _: None)
    assert outcome.failed == {}
    return settings


def _table(settings, name):
    return pl.read_parquet(settings.local_root / "tables" / name / "batch=*" / "data.parquet")


def test_every_tau2_simulation_is_parsed_or_quarantined_file_by_file(real_run):
    parsed = _table(real_run, "trajectories").group_by("raw_file").len()
    quarantined = _table(real_run, "quarantine").group_by("raw_file").len()
    counts = {f: n for f, n in parsed.rows()}
    for f, n in quarantined.rows():
        counts[f] = counts.get(f, 0) + n
    for path in sorted((REAL / "tau2").glob("*.json")):
        assert counts.pop(f"tau2/{path.name}") == len(json.loads(path.read_text())["simulations"]), path.name
    skipped = _table(real_run, "skipped_inputs")
    assert set(skipped["raw_file"]) == {
        "tau2/LICENSE",
        "coding/LICENSE-OpenHands",
        "coding/LICENSE-SWE-agent",
        "coding/LICENSE-mini-swe-agent",
        "tau_bench/LICENSE",
        "tau_bench/policy_airline.md",
        "tau_bench/policy_retail.md",
    }


def _record_like(value) -> bool:
    """The oracle's own reading of "an id the grader compares": a string of 4+ characters with a digit or @ # /."""
    return isinstance(value, str) and len(value) >= 4 and bool(re.search(r"[0-9@#/]", value))


def _leaves(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _hidden_by_head(sim: dict, task: dict) -> bool:
    """Whether some id of a required assistant action is, before the agent first uses it, shown only past the
    first 1,000 characters of tool observations (and never by the policy or the user)."""
    agent_view = [
        m
        for m in sim["messages"]
        if m.get("requestor", "assistant") == "assistant" or (m["role"] == "user" and m.get("content"))
    ]
    for action in (task.get("evaluation_criteria") or {}).get("actions") or []:
        if action.get("requestor") != "assistant":
            continue
        for value in filter(_record_like, _leaves(action.get("arguments") or {})):
            word = re.compile(r"(?<![0-9a-z])" + re.escape(value.lower()) + r"(?![0-9a-z])")
            for i, m in enumerate(agent_view):
                text = json.dumps([c.get("arguments") for c in m.get("tool_calls") or []]) + (m.get("content") or "")
                if m["role"] == "assistant" and word.search(text.lower()):
                    shown = [
                        word.search(
                            (e.get("content") or "").lower()[:ALLOWANCE]
                            if e["role"] == "tool"
                            else (e.get("content") or "").lower()
                        )
                        for e in agent_view[:i]
                    ]
                    somewhere = any(
                        word.search((e.get("content") or "").lower()) for e in agent_view[:i] if e["role"] == "tool"
                    )
                    if somewhere and not any(shown):
                        return True
                    break
    return False


def test_head_truncation_is_flagged_exactly_where_required_ids_sit_past_the_allowance(real_run):
    audit = _table(real_run, "evidence_audit")
    runs = _table(real_run, "trajectories").filter(pl.col("grade_passed") & pl.col("category").str.starts_with("tau2"))
    flagged = set(
        audit.filter(pl.col("lost_under").list.contains("head") & (pl.col("check_type") == "tool_called"))[
            "trajectory_id"
        ]
    )
    expected = set()
    for path in sorted((REAL / "tau2").glob("*.json")):
        doc = json.loads(path.read_text())
        tasks = {str(t["id"]): t for t in doc["tasks"]}
        for sim in doc["simulations"]:
            tid = f"{path.stem}:{sim['task_id']}:{sim['trial']}"
            if tid in set(runs["trajectory_id"]) and _hidden_by_head(sim, tasks[str(sim["task_id"])]):
                expected.add(tid)
    assert len(expected) == 23 and expected == flagged & set(runs["trajectory_id"])
    assert audit.filter(pl.col("lost_under").list.contains("evidence_aware")).is_empty()


def test_every_coding_agent_file_yields_calls_answered_by_observations(real_run):
    calls = _table(real_run, "tool_calls").filter(pl.col("batch") == "coding")
    runs = _table(real_run, "trajectories").filter(pl.col("batch") == "coding")
    per_file = (
        runs.join(calls, on="trajectory_id")
        .group_by("raw_file")
        .agg(calls=pl.len(), answered=pl.col("observation").is_not_null().sum())
    )
    assert sorted(per_file["raw_file"]) == sorted(
        f"coding/{p.name}" for p in (REAL / "coding").iterdir() if not p.name.startswith("LICENSE")
    )
    assert (per_file["answered"] > 0).all() and (per_file["calls"] >= per_file["answered"]).all()
    assert runs.height == 6  # three OpenHands runs, two mini-swe-agent runs, one SWE-agent run


@pytest.mark.parametrize(
    "trajectory_id, raw",
    [
        (
            "openhands_multiswebench_examples_output:ponylang__ponyc-4593",
            "coding/openhands_multiswebench_examples_output.jsonl:2",
        ),
        ("minisweagent_github_issue", "coding/minisweagent_github_issue.traj.json:1"),
    ],
)
def test_coding_runs_trace_back_to_their_raw_line(real_run, trajectory_id, raw, capsys):
    from cowork_cli.cli import main

    assert main(["trace", trajectory_id, "--data-root", real_run.root]) == 0
    out = capsys.readouterr().out
    assert raw in out.replace(" line ", ":").replace(", line ", ":")


def test_regrading_the_real_runs_agrees_as_documented(real_run):
    """Per results file: (compared, agreeing, untrusted) runs. Every file agrees on at least 90% of the runs it
    compares, and every disagreement names a reason other than the generic one."""
    from cowork_assets.validation.regrade import agreement

    found = _table(real_run, "regrade").join(
        _table(real_run, "trajectories").select("trajectory_id", "raw_file"), on="trajectory_id"
    )
    per_file = {
        f: agreement(found.filter(pl.col("raw_file") == f))
        for f in found["raw_file"].unique().sort()
        if f.startswith(("tau2/", "tau_bench/"))
    }
    assert {
        f.split("/")[1].removesuffix(".json"): (a["compared"], a["agree"], a["untrusted"]) for f, a in per_file.items()
    } == {
        "judgeviewer_azure_gpt4o_airline": (50, 50, 0),
        "sierra_ftgpt41_airline_1trial": (20, 20, 0),
        "sierra_ftgpt41_retail_1trial": (39, 39, 1),
        "sierra_ftgpt41_telecom_1trial": (12, 12, 0),
        "sierra_gpt41_airline_1trial": (20, 20, 0),
        "sierra_gpt41_retail_1trial": (39, 38, 1),
        "sierra_gpt41_telecom_1trial": (12, 12, 0),
        "sierra_gpt41_telecom_nouser_1trial": (12, 12, 0),
        "sierra_gpt4o_telecom_sim": (2, 2, 0),
        "sierra_qwen25_7b_airline_1trial": (50, 47, 0),
        "gpt-4o-airline": (200, 198, 0),
        "madhavkanda-l0-gpt-4o-retail": (102, 101, 13),
    }
    assert all(a["agree"] >= 0.9 * a["compared"] for a in per_file.values())
    reasons = dict(
        found.filter(pl.col("raw_file").str.starts_with("tau"), pl.col("disagreement") != "undecidable")
        .group_by("disagreement")
        .len()
        .iter_rows()
    )
    assert reasons == {
        "failure without check results": 5,  # tau-bench reward_info null, tau2 agent_error: the run errored
        "ground truth ignores the writes": 10,  # passes of tau-bench retail tasks that skip or miss their writes
        "reference write not made": 2,  # task 64: the reference's exchange of a pending order's item fails
    }

    findings = TABLES["task_findings"].read(real_run.root)
    untrusted = findings.filter(pl.col("kind") == "ground_truth_unchanged")
    # tau-bench retail: the starting state's hash is the ground truth of 13 tasks that write; tau2 retail task 12:
    # a run that wrote nothing reached the reference's database (its return is refused: not the original payment)
    assert sorted(untrusted["task_id"]) == [
        *(f"tau-retail-{t}" for t in (100, 101, 102, 103, 106, 107, 108, 110, 111, 112, 113, 114, 12)),
        "tau2-retail-12",
    ]
    assert set(findings.filter(pl.col("kind") == "ground_truth_unchanged")["severity"]) == {"error"}


def test_compute_score_reproduces_the_regraded_score_of_every_real_run(real_run):
    from cowork_assets.rewards import compute_score
    from cowork_assets.trainers import for_chat_template
    from tests.test_rewards import render

    found = _table(real_run, "regrade").filter(pl.col("regraded_score").is_not_null())
    messages = _table(real_run, "messages").filter(pl.col("trajectory_id").is_in(found["trajectory_id"].implode()))
    packages = _table(real_run, "task_packages").select("task_hash", "checks").unique("task_hash")
    runs = _table(real_run, "trajectories").select("trajectory_id", "task_hash").join(packages, on="task_hash")
    checks = dict(runs.select("trajectory_id", "checks").iter_rows())
    compared = 0
    for (tid,), rows in messages.sort("message_index").group_by("trajectory_id", maintain_order=True):
        conversation = [
            {
                "role": r["role"],
                "content": r["content"] or "",
                "tool_call_id": r["tool_call_id"],
                "tool_calls": [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in r["tool_calls"]
                ],
            }
            for r in rows.iter_rows(named=True)
        ]
        first_user = next((i for i, m in enumerate(conversation) if m["role"] == "user"), None)
        if first_user is None:
            continue
        chat, _ = for_chat_template(conversation, "[]")
        prompt = render("qwen2.5.jinja", chat[: first_user + 1], add_generation_prompt=True)
        response = render("qwen2.5.jinja", chat)[len(prompt) :].replace("<|im_start|>", "").replace("<|im_end|>", "")
        expected = found.filter(pl.col("trajectory_id") == tid)["regraded_score"][0]
        assert compute_score("cowork", response, checks[tid]) == pytest.approx(expected), tid
        assert compute_score("cowork", "", checks[tid], {"messages": conversation}) == pytest.approx(expected), tid
        compared += 1
    assert compared == 573  # every run with a check replay counts


def test_the_sweeps_head_row_at_the_allowance_is_the_audits_head_loss(real_run):
    audit = (
        _table(real_run, "evidence_audit")
        .group_by("batch")
        .agg(lost_under_head=pl.col("lost_under").list.contains("head").sum())
    )
    sweep = (
        _table(real_run, "truncation_sweep")
        .filter(pl.col("strategy") == "head", pl.col("max_observation_chars") == real_run.max_observation_chars)
        .group_by("batch")
        .agg(pl.col("lost_items").sum())
    )
    # 9 of them are the lines coding runs' edits copied from file views (evidence/edits.py)
    assert sorted(audit.rows()) == sorted(sweep.rows()) and sum(n for _, n in audit.rows()) == 371
    assert _table(real_run, "truncation_sweep").filter(pl.col("strategy") == "evidence_aware")["lost_items"].sum() == 0
