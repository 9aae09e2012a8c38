"""The published datasets in the trainers' own code: TRL's SFTTrainer and verl's RLHFDataset, ToolAgentLoop,
reward loader and multi-turn SFT dataset, run in the trainer environment (`.venv-train`, which `make test`
builds with pip: CPU torch, trl, verl) by the scripts in tests/trainers/; these tests assert on what they saw."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from pathlib import Path

import orjson
import polars as pl
import pytest

from cowork_assets.datasets.export import jsonl
from cowork_assets.store.storage import plain
from tests.conftest import ROOT, SHARED

REPO = ROOT
TRAIN_PYTHON = REPO / ".venv-train" / "bin" / "python"
SCRIPTS = REPO / "tests" / "trainers"


def _published(settings, dataset: str) -> pl.DataFrame:
    return plain(pl.read_parquet(Path(settings.local_root) / "published" / dataset / "current" / "*.parquet"))


def _run(script: str, data_root: str, work: Path, facts: str | None = None) -> dict:
    """Run a trainer script in .venv-train on a data root; the facts it wrote (`facts`: their file's name in `work`)."""
    if not TRAIN_PYTHON.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{TRAIN_PYTHON} is missing: `make test` builds it")
        pytest.skip("the trainer environment is not built (make test builds .venv-train)")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HF_HOME": str(work / "hf"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "WANDB_MODE": "disabled",
        "HOME": str(work),  # verl caches datasets under ~/.cache
    }
    done = subprocess.run(
        [str(TRAIN_PYTHON), str(SCRIPTS / script), data_root, str(work)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    facts = facts or script.replace("_sft.py", "_facts.json").replace("_rl.py", "_facts.json")
    return json.loads((work / facts).read_text())


@pytest.fixture(scope="module")
def trl(pipeline, tmp_path_factory):
    settings, _, _ = pipeline
    work = tmp_path_factory.mktemp("trl")
    jsonl(settings.root, work / "sft.jsonl", split=None)
    return settings, _run("trl_sft.py", settings.root, work)


ROUND4 = SHARED / "realdata" / "round4"


@pytest.fixture(scope="module")
def trl_real(tmp_path_factory):
    """TRL over the rows published from the shared real logs of every coding format and of Claude Code and Codex."""
    import shutil

    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    if not ROUND4.is_dir():
        pytest.skip("../shared/realdata/round4 is absent")
    work = tmp_path_factory.mktemp("trl-real")
    for batch in sorted(p.name for p in ROUND4.iterdir() if p.is_dir()):
        shutil.copytree(ROUND4 / batch, work / "raw" / batch)
    settings = CurateSettings(raw_root=str(work / "raw"), data_root=str(work / "curated"), accept_ungraded=True)
    assert materialize_all(settings, ensure_instance(work / "home"), echo=lambda _: None).failed == {}
    jsonl(settings.root, work / "sft.jsonl", split=None)
    return settings, _run("trl_sft.py", settings.root, work)


@pytest.fixture(scope="module")
def verl(pipeline, tmp_path_factory):
    settings, _, _ = pipeline
    return settings, _run("verl_rl.py", settings.root, tmp_path_factory.mktemp("verl"))


@pytest.mark.parametrize("template", ["qwen2.5.jinja", "llama3.1.jinja"])
def test_trl_renders_every_published_sample_as_published(trl, template):
    settings, facts = trl
    train = _published(settings, "sft_dataset").filter(pl.col("split") == "train")
    samples = facts["templates"][template]
    assert facts["rows"] == {
        "train": train.height,
        "validation": _published(settings, "sft_dataset").height - train.height,
    }
    assert sorted(s["sample_id"] for s in samples) == sorted(train["sample_id"].to_list())
    for s in samples:
        # tool schemas exactly as published: no `null` properties merged in from other tools
        assert s["tools"] == s["published"]["tools"], s["sample_id"]
        # every call's arguments come out as the JSON object that was published, not a string
        assert s["calls"] == s["published"]["calls"], s["sample_id"]
        assert all(isinstance(c["arguments"], dict) for c in s["calls"])
        assert s["responses_after_calls"] and s["last_turn"] == "assistant", s["sample_id"]
        # assistant-only loss trains on exactly the assistant turns, each whole
        assert s["masked"] == s["assistant_turns"], s["sample_id"]
        assert len(s["assistant_turns"]) == s["published"]["roles"].count("assistant")
    assert sum(len(s["calls"]) for s in samples) > 200
    # The training templates render exactly as the plain ones; the JSON Lines export renders as the Parquet.
    assert facts["differs_from_reference"][template] == []
    assert facts["jsonl_differs"][template] == []
    # The `tokenizer` setting counts every sample as transformers' apply_chat_template tokenizes it.
    assert facts["token_counts_differ"][template] == []


@pytest.mark.parametrize("template", ["qwen2.5.jinja", "llama3.1.jinja"])
def test_trl_on_real_runs_renders_reasoning_and_each_action_once_and_trains_on_both(trl_real, template):
    settings, facts = trl_real
    samples = facts["templates"][template]
    batches = dict(_published(settings, "sft_dataset").select("sample_id", "batch").iter_rows())
    assert {batches[s["sample_id"]] for s in samples} >= {"claude_code_spotter", "codex_codemie", "sweagent_more"}
    for s in samples:
        assert s["calls"] == s["published"]["calls"], s["sample_id"]  # every call once; text actions stay text
        assert s["masked"] == s["assistant_turns"], s["sample_id"]  # the loss covers reasoning and actions
        if template.startswith("qwen"):
            assert s["reasoning"] == s["published"]["reasoning"], s["sample_id"]
    if template.startswith("qwen"):
        assert sum(len(s["reasoning"]) for s in samples) > 0
    assert facts["differs_from_reference"][template] == [] and facts["token_counts_differ"][template] == []


def test_trl_trains_with_and_without_assistant_only_loss(trl):
    _, facts = trl
    runs = facts["training"]
    for run in runs.values():
        assert run["steps"] == 3 and len(run["losses"]) == 3
        assert all(math.isfinite(loss) and loss > 0 for loss in run["losses"])
    assert runs["assistant_only"]["losses"] != runs["all_tokens"]["losses"]  # the mask changes what is trained


def test_verl_reads_the_rl_tasks_with_objects_and_a_tool_per_call(verl):
    settings, facts = verl
    published = _published(settings, "rl_tasks").unnest("extra_info")
    rows = {r["task_id"]: r for r in facts["rows"]}
    assert sorted(rows) == sorted(published["task_id"].to_list())
    for task_id, tools_kwargs, selection, checks in published.select(
        "task_id", "tools_kwargs", "tool_selection", pl.col("reward_model").struct.field("ground_truth")
    ).iter_rows():
        row = rows[task_id]
        assert row["agent_name"] == "tool_agent"
        assert row["tools_kwargs"] == orjson.loads(tools_kwargs)  # an object per tool, as verl's tools take it
        assert all(set(spec) == {"create_kwargs"} for spec in row["tools_kwargs"].values())
        assert row["tool_selection"] == selection and set(selection) >= set(row["tools_kwargs"])
        assert row["ground_truth"] == orjson.loads(checks)
    simulated = {t for r in facts["rows"] if r["tools_simulated"] for t in r["tool_selection"]}
    assert sorted(s["function"]["name"] for s in facts["tool_schemas"]) == sorted(simulated)


def _value_at(state: dict, path: str):
    service, record_id, field = path.split(".")
    return next(r for r in state[service] if r["id"] == record_id)[field]


def test_verl_tool_agent_executes_every_call_against_the_task_state(verl):
    settings, facts = verl
    sft = _published(settings, "sft_dataset")
    one_user_turn = sft.filter(
        pl.col("messages").list.eval(pl.element().struct.field("role") == "user").list.sum() == 1
    )
    simulated = {r["task_id"] for r in facts["rows"] if r["tools_simulated"]}
    expected = sorted(set(one_user_turn["task_id"].to_list()) & simulated)
    runs = facts["runs"]
    assert sorted(r["task_id"] for r in runs) == expected and len(runs) > 30
    reads = writes = 0
    for run in runs:
        answers = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", run["response"], re.S)
        assert len(answers) == len(run["calls"]) == len(run["recorded_observations"]), run["task_id"]
        for name, answer, recorded in zip(run["calls"], answers, run["recorded_observations"]):
            got, was = json.loads(answer), json.loads(recorded)
            assert not (isinstance(got, dict) and "error" in got), (run["task_id"], name, got)
            if name.endswith(("_create", "_create_event", "_send", "_send_message")):
                writes += 1  # created records get the simulation's ids; the rest is what the run saw
                assert {k: v for k, v in got.items() if k not in ("id", "message_id")} == {
                    k: v for k, v in was.items() if k not in ("id", "message_id")
                }, (run["task_id"], name)
            else:
                reads += 1
                assert got == was, (run["task_id"], name)  # reads answer exactly what the teacher's run saw
        # the calls changed the rollout's own state as the task's checks expect
        for check in run["checks"]:
            if check["type"] == "state_equals":
                assert _value_at(run["state"], check["path"]) == check["value"], run["task_id"]
    assert reads > 40 and writes > 20


def test_verl_loads_the_reward_three_ways_and_scores_the_replayed_rollouts(verl):
    _, facts = verl
    teacher = [r["teacher_reward"] for r in facts["runs"]]
    assert facts["rewards"]["file"] == facts["rewards"]["pkg"] == facts["rewards"]["config"] == teacher


def test_verl_multiturn_sft_dataset_reads_the_published_sft(verl):
    settings, facts = verl
    assert facts["sft"]["rows"] == _published(settings, "sft_dataset").height
    assert facts["sft"]["tools_are_lists"] and facts["sft"]["first_loss_tokens"] > 0
