"""Published datasets: trainer shape, exact round trips, RL rewards, blocking gates, versions, exports."""

import json
import math
import os
import re
from pathlib import Path

import polars as pl
import pytest

from cowork_assets.check_types import first_turns
from cowork_assets.datasets import publish as pub
from cowork_assets.datasets.rl import group_rewards, tools_kwargs
from cowork_assets.rewards import turns_by_trajectory as assistant_turns
from cowork_assets.store import versions
from cowork_assets.store.registry import TABLES
from cowork_assets.store.storage import plain


def _published(settings, dataset):
    """A published dataset as the pipeline's models see it: JSON fields as strings (`plain`)."""
    folder = settings.local_root / "published" / dataset / "current"
    return plain(pl.concat([pl.read_parquet(p) for p in sorted(folder.glob("*.parquet"))]))


def test_sft_rows_round_trip_to_the_curated_messages_of_their_source(pipeline):
    settings, _, _ = pipeline
    sft = _published(settings, "sft_dataset")
    curated = TABLES["curated_messages"].scan(settings.root).collect()
    assert sft.height > 100
    for row in sft.iter_rows(named=True):
        source = curated.filter(pl.col("trajectory_id") == row["trajectory_id"]).sort("message_index")
        expected = [
            {
                "role": m["role"],
                "content": m["content"] or "",  # text: a turn that only calls tools publishes ""
                "reasoning_content": m["reasoning_content"],
                "tool_call_id": m["tool_call_id"],
                "name": m["name"],
                "tool_calls": [
                    {"id": c["id"], "type": c["type"], "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in m["tool_calls"]
                ],
            }
            for m in source.iter_rows(named=True)
        ]
        assert row["messages"] == expected  # every message, tool-call arguments included
        assert row["raw_file"] and row["raw_record"] >= 1 and row["sample_id"] == row["trajectory_id"]


def test_sft_tokens_count_exactly_the_published_text(pipeline):
    from cowork_assets.tokens import get_encoding

    settings, _, _ = pipeline
    enc = get_encoding("o200k_base")
    for row in _published(settings, "sft_dataset").head(40).iter_rows(named=True):
        assert row["tokens"] == sum(len(enc.encode_ordinary(t)) for t in published_texts(row["messages"]))
        assert row["chars"] == published_chars(row["messages"])


def test_the_sft_candidate_counts_tokens_in_helpers_only_for_a_corpus_that_repays_them(
    pipeline, pipeline_copy, monkeypatch
):
    """A helper costs a start: below HELPER_MIN_TEXTS messages the candidate's tokens are counted in its own process,
    from there in `tokenizer_processes` helpers; the candidate is the same either way."""
    import dagster as dg

    from cowork_assets import tokens
    from cowork_assets.datasets import assets

    settings, _, _ = pipeline
    copied = pipeline_copy
    started, start = [], tokens._Helper.__init__
    monkeypatch.setattr(tokens._Helper, "__init__", lambda helper, *args: started.append(1) or start(helper, *args))

    def candidate() -> dict[str, pl.DataFrame]:
        result = dg.materialize([assets.CANDIDATES["sft_dataset"]], resources={"settings": copied})
        folder = Path(result.asset_materializations_for_node("sft_candidate")[0].metadata["candidate"].value)
        return {p.name: pl.read_parquet(p) for p in sorted(folder.glob("*.parquet"))}

    small = candidate()
    assert started == [] and sum(f.height for f in small.values()) == _published(settings, "sft_dataset").height
    monkeypatch.setattr(assets, "HELPER_MIN_TEXTS", TABLES["curated_messages"].rows(copied.root))  # exactly enough
    large = candidate()
    assert len(started) == settings.tokenizer_processes == 2
    assert large.keys() == small.keys() and all(large[f].equals(small[f]) for f in small)


def published_texts(messages: list[dict]) -> list[str]:
    """The text of each published message as it is tokenized: reasoning, content, each call's name and arguments."""
    return [
        (m["reasoning_content"] + "\n" if m["reasoning_content"] is not None else "")
        + (m["content"] or "")
        + "\n"
        + "\n".join(f"{c['function']['name']} {c['function']['arguments']}" for c in m["tool_calls"])
        for m in messages
    ]


def published_chars(messages: list[dict]) -> int:
    """A published sample's characters, read from its messages: reasoning, content, calls' names and arguments."""
    return sum(
        len(m["reasoning_content"] or "")
        + len(m["content"] or "")
        + sum(len(c["function"]["name"]) + len(c["function"]["arguments"]) for c in m["tool_calls"])
        for m in messages
    )


def test_the_benchmark_floor_tokenizes_exactly_the_text_the_pipeline_counts(pipeline):
    from bench.harness import published_sft_texts
    from cowork_assets.tokens import count_tokens

    settings, _, _ = pipeline
    sft = _published(settings, "sft_dataset")
    texts = published_sft_texts(settings.local_root)
    assert len(texts) == sft["messages"].list.len().sum()
    assert sum(count_tokens(texts, "o200k_base")) == sft["tokens"].sum()


def test_sft_selection_is_exactly_the_unexcluded_teacher_runs(pipeline):
    settings, _, _ = pipeline
    sft = _published(settings, "sft_dataset")
    excluded = TABLES["exclusions"].read(settings.root).filter(pl.col("dataset") == "sft")
    teachers = TABLES["trajectories"].scan(settings.root).collect().filter(pl.col("teacher_role") == "teacher")
    assert set(sft["sample_id"]) == set(teachers["trajectory_id"]) - set(excluded["trajectory_id"])


def test_splits_are_disjoint_by_task_and_agree_across_datasets(pipeline):
    settings, _, _ = pipeline
    sft = _published(settings, "sft_dataset")
    rl = _published(settings, "rl_tasks")
    assert set(sft["split"]) == {"train", "validation"}
    assert sft.group_by("task_id").agg(pl.col("split").n_unique())["split"].max() == 1
    rl_split = dict(zip(rl["extra_info"].struct.field("task_id"), rl["extra_info"].struct.field("split")))
    both = [(t, s) for t, s in sft.select("task_id", "split").unique().iter_rows() if t in rl_split]
    assert both and all(rl_split[t] == s for t, s in both)


def test_published_rows_are_in_their_documented_order(pipeline):
    """Built a batch at a time, the datasets are still written in one order: SFT by task, then sample, in
    each split file; RL tasks by index, which numbers the tasks in task order across both splits."""
    settings, _, _ = pipeline
    for split in ("train", "validation"):
        sft = pl.read_parquet(settings.local_root / "published" / "sft_dataset" / "current" / f"{split}.parquet")
        assert sft.height > 0 and sft.select("task_id", "sample_id").equals(
            sft.select("task_id", "sample_id").sort(pl.all())
        )
    rl = (
        _published(settings, "rl_tasks")
        .select(pl.col("extra_info").struct.unnest())
        .select("index", "task_id", "split")
    )
    assert rl["index"].sort().to_list() == list(range(rl.height))
    assert rl.sort("index")["task_id"].to_list() == sorted(rl["task_id"].to_list())
    for split in ("train", "validation"):
        indexes = rl.filter(pl.col("split") == split)["index"]
        assert indexes.len() > 0 and indexes.is_sorted()


def test_rl_tasks_have_exactly_the_documented_keys_and_types(pipeline, labels):
    settings, _, _ = pipeline
    rl = _published(settings, "rl_tasks")
    assert dict(rl.schema) == {
        "data_source": pl.String,
        "agent_name": pl.String,
        "prompt": pl.List(pl.Struct({"role": pl.String, "content": pl.String})),
        "ability": pl.String,
        "reward_model": pl.Struct({"style": pl.String, "ground_truth": pl.String}),
        "extra_info": pl.Struct(
            {
                "split": pl.String,
                "index": pl.Int64,
                "task_id": pl.String,
                "need_tools_kwargs": pl.Boolean,
                "tools_kwargs": pl.String,
                "tool_selection": pl.List(pl.String),
                "tools_simulated": pl.Boolean,
                "interaction_kwargs": pl.Struct({"name": pl.String, "task_id": pl.String, "query": pl.String}),
                "teacher_pass_rate": pl.Float64,
                "difficulty": pl.Float64,
            }
        ),
    }
    row = rl.row(0, named=True)
    assert [m["role"] for m in row["prompt"]] == ["system", "user"] and row["reward_model"]["style"] == "rule"
    assert isinstance(json.loads(row["reward_model"]["ground_truth"]), list)
    for spec in json.loads(row["extra_info"]["tools_kwargs"]).values():
        assert set(spec) == {"create_kwargs"}
    assert row["agent_name"] == "tool_agent" and row["extra_info"]["tools_simulated"]
    assert row["extra_info"]["tool_selection"] == list(
        json.loads(row["extra_info"]["tools_kwargs"])
    )  # the task's tools
    inconsistent = {
        l["task_id"] for l in labels if l["kind"] in ("unexposed_endpoint", "count_mismatch", "duplicate_creations")
    }
    assert not inconsistent & set(rl["extra_info"].struct.field("task_id"))  # left out, and recorded:
    excluded = TABLES["exclusions"].read(settings.root).filter(pl.col("dataset") == "rl_tasks")
    assert set(excluded["task_id"]) == inconsistent


def test_grpo_and_gdpo_equal_hand_computed_values():
    def rewards(scores, check_rewards, **kwargs):
        rollouts = pl.DataFrame(
            {"row": range(len(scores)), "group": "g", "score": scores}, schema_overrides={"row": pl.UInt32}
        )
        checks = pl.DataFrame(
            [
                (row, cid, "t", weight, reward, None)
                for row, per_run in enumerate(check_rewards)
                for (cid, weight), reward in zip([("a", 1.0), ("b", 2.0)], per_run)
            ],
            orient="row",
            schema={
                "row": pl.UInt32,
                "check_id": pl.String,
                "type": pl.String,
                "weight": pl.Float64,
                "reward": pl.Float64,
                "first_turn": pl.Int32,
            },
        )
        return group_rewards(rollouts, checks, eps=1e-6, **kwargs).sort("row").to_dicts()

    out = rewards([1.0, 0.5, 0.0], [(1.0, 1.0), (1.0, 0.0), (0.0, 0.0)])
    # scores 1, .5, 0: mean .5, sample std .5 -> (1 - .5)/(.5 + 1e-6) etc.
    assert [r["grpo_advantage"] for r in out] == pytest.approx([0.5 / 0.500001, 0.0, -0.5 / 0.500001])
    # check a: 1, 1, 0 -> mean 2/3, std sqrt(1/3); check b: 1, 0, 0 -> mean 1/3, std sqrt(1/3)
    sa = sb = math.sqrt(1 / 3)
    expected = [
        1 * (1 - 2 / 3) / (sa + 1e-6) + 2 * (1 - 1 / 3) / (sb + 1e-6),
        1 * (1 - 2 / 3) / (sa + 1e-6) + 2 * (0 - 1 / 3) / (sb + 1e-6),
        1 * (0 - 2 / 3) / (sa + 1e-6) + 2 * (0 - 1 / 3) / (sb + 1e-6),
    ]
    assert [r["gdpo_advantage"] for r in out] == pytest.approx(expected)
    assert [c["normalized"] for c in out[1]["checks"]] == pytest.approx(
        [(1 - 2 / 3) / (sa + 1e-6), (0 - 1 / 3) / (sb + 1e-6)]
    )
    assert not out[0]["zero_variance"] and out[0]["group_std"] == pytest.approx(0.5) and out[0]["group_size"] == 3
    flat = rewards([1.0, 1.0], [(1.0, 1.0), (1.0, 1.0)])
    assert [(r["zero_variance"], r["grpo_advantage"], r["gdpo_advantage"]) for r in flat] == [(True, 0.0, 0.0)] * 2
    population = rewards([1.0, 0.5, 0.0], [(1.0, 1.0), (1.0, 0.0), (0.0, 0.0)], sample_std=False)
    assert population[0]["group_std"] == pytest.approx(math.sqrt(1 / 6))
    alone = rewards([0.7], [(1.0, 0.0)])  # a group of one: std 0, no signal
    assert (alone[0]["group_std"], alone[0]["zero_variance"], alone[0]["grpo_advantage"]) == (0.0, True, 0.0)


def test_turn_at_which_each_check_is_first_satisfied():
    def call(name, args):
        return {"id": f"c_{name}", "type": "function", "name": name, "arguments": json.dumps(args)}

    messages = pl.DataFrame(
        [
            {
                "trajectory_id": "r",
                "message_index": i,
                "role": role,
                "content": content,
                "tool_calls": calls,
                "tool_call_id": None,
            }
            for i, (role, content, calls) in enumerate(
                [
                    ("user", "go", []),
                    ("assistant", "looking", [call("search", {"q": "x"})]),
                    ("tool", "r", []),
                    ("assistant", None, [call("create", {"title": "A"}), call("create", {"title": "A"})]),
                    ("assistant", None, [call("send", {"to": "c_1", "n": 2}), call("create", {"title": "B"})]),
                    ("assistant", "Sent the Q3-REPORT link.", []),
                ]
            )
        ]
    ).sample(fraction=1.0, shuffle=True, seed=3)  # turns are read in message order, whatever the row order
    turns = assistant_turns(messages)
    assert turns == {
        "r": [
            ("looking", [("search", '{"q": "x"}', True)]),  # (tool, arguments, succeeded)
            (None, [("create", '{"title": "A"}', True), ("create", '{"title": "A"}', True)]),
            (None, [("send", '{"to": "c_1", "n": 2}', True), ("create", '{"title": "B"}', True)]),
            ("Sent the Q3-REPORT link.", []),
        ]
    }
    checks = [
        {"id": "sent", "type": "tool_called", "tool": "send", "args": {"to": "c_1"}},
        {"id": "wrong", "type": "tool_called", "tool": "send", "args": {"to": "c_2"}},
        {"id": "items", "type": "distinct_items", "tool": "create", "key": "title", "expected": 2},
        {"id": "kw", "type": "keywords_present", "keywords": ["q3-report"]},
        {"id": "never_delete", "type": "tool_not_called", "tool": "delete"},
        {"id": "no_search", "type": "tool_not_called", "tool": "search"},
        {"id": "twice", "type": "tool_called", "tool": "create", "min_calls": 3},
        {"id": "state", "type": "state_equals", "path": "x", "value": 1},
    ]
    assert first_turns(checks, turns["r"]) == {
        "sent": 3,
        "wrong": None,
        "items": 3,
        "kw": 4,
        "never_delete": 1,
        "no_search": None,
        "twice": 3,
        "state": None,
    }
    assert first_turns(checks, []) == {
        "sent": None,
        "wrong": None,
        "items": None,
        "kw": None,
        "never_delete": None,
        "no_search": None,
        "twice": None,
        "state": None,
    }


def test_rollouts_cover_the_student_groups(pipeline):
    settings, _, _ = pipeline
    rollouts = _published(settings, "rl_rollouts")
    students = TABLES["trajectories"].scan(settings.root).collect().filter(pl.col("teacher_role") == "student")
    assert set(rollouts["trajectory_id"]) == set(students["trajectory_id"])
    sizes = rollouts.group_by("group_id").agg(pl.len(), pl.col("group_size").first())
    assert (sizes["len"] == sizes["group_size"]).all()
    assert rollouts.group_by("group_id").agg(pl.col("grpo_advantage").sum())["grpo_advantage"].abs().max() < 1e-9


def test_the_card_counts_rows_over_trainer_lengths_per_split_and_category(pipeline):
    settings, _, _ = pipeline
    folder = settings.local_root / "published" / "sft_dataset" / "current"
    card = json.loads((folder / "card.json").read_text())
    sft = _published(settings, "sft_dataset")
    assert sum(r["rows"] for r in card["token_lengths"]) == sft.height
    for r in card["token_lengths"]:
        part = sft.filter(pl.col("split") == r["split"], pl.col("category") == r["category"])
        assert r["rows"] == part.height and r["max_tokens"] == part["tokens"].max()
        for n in (2048, 4096, 8192, 16384, 32768):
            assert r[f"over_{n}"] == (part["tokens"] > n).sum()
    assert any(r["over_2048"] for r in card["token_lengths"]) and "> 2048" in (folder / "card.md").read_text()


def test_the_card_reports_stages_reasons_retention_and_settings(pipeline):
    settings, _, _ = pipeline
    card = json.loads((settings.local_root / "published" / "sft_dataset" / "current" / "card.json").read_text())
    sft = _published(settings, "sft_dataset")
    funnel = {f["step"]: f["remaining"] for f in card["funnel"]}
    assert funnel["parsed"] == 300 and funnel["published"] == sft.height == funnel["after cap"]
    assert {r["criterion"] for r in card["drop_reasons"]} >= {"role", "grade", "task_consistency", "dedup"}
    assert card["evidence_retention"]["head"]["share"] < card["evidence_retention"]["evidence_aware"]["share"] == 1.0
    assert sum(b["count"] for b in card["length_histogram"]) == sft.height
    assert card["settings"]["truncation_strategy"] == "evidence_aware" and len(card["settings_hash"]) == 16
    assert card["code_version"].startswith("0.1.0") and card["previous_version"] is None
    folder = settings.local_root / "published" / "sft_dataset" / "current"
    assert "lengths.svg" in (folder / "card.md").read_text() and (folder / "lengths.svg").read_text().startswith("<svg")
    axes = {"lengths.svg": ("characters per sample", ">samples<"), "sweep.svg": ("log scale)", "lost<")}
    for chart, titles in axes.items():  # both axes say what they measure
        assert all(t in (folder / chart).read_text() for t in titles), chart
    assert "Tokens of each row's texts in tiktoken's `o200k_base`, no template." in (folder / "card.md").read_text()
    assert (settings.local_root / "published" / "CARD.md").exists()


def test_published_parquet_loads_with_hugging_face_datasets(pipeline):
    import datasets

    settings, _, _ = pipeline
    folder = settings.local_root / "published" / "sft_dataset" / "current"
    ds = datasets.load_dataset("parquet", data_files={"train": str(folder / "train.parquet")}, split="train")
    message = ds.features["messages"].feature
    assert message["role"] == datasets.Value("string") and message["content"] == datasets.Value("string")
    # JSON fields come out as one object per row (Arrow's JSON type): no schema merged across rows
    assert message["tool_calls"].feature["function"]["arguments"] == datasets.Json()
    assert ds.features["tools"] == datasets.Json() and ds.features["raw_record"] == datasets.Value("int64")
    assert ds.num_rows == pl.read_parquet(folder / "train.parquet").height
    stored = plain(pl.read_parquet(folder / "train.parquet"))
    for row, (messages, tools) in zip(ds, stored.select("messages", "tools").iter_rows()):
        assert row["tools"] == json.loads(tools)
        calls = [c["function"]["arguments"] for m in row["messages"] for c in m["tool_calls"] or []]
        assert calls == [json.loads(c["function"]["arguments"]) for m in messages for c in m["tool_calls"] or []]
    rl = datasets.load_dataset(
        "parquet",
        data_files=str(settings.local_root / "published" / "rl_tasks" / "current" / "train.parquet"),
        split="train",
    )
    assert set(rl.features) == {"data_source", "agent_name", "prompt", "ability", "reward_model", "extra_info"}
    assert rl.features["extra_info"]["tools_kwargs"] == datasets.Json()
    assert rl.features["reward_model"]["ground_truth"] == datasets.Json()
    assert isinstance(rl[0]["extra_info"]["tools_kwargs"], dict) and isinstance(
        rl[0]["reward_model"]["ground_truth"], list
    )


def test_exports(pipeline, tmp_path):
    from cowork_cli.cli import main

    settings, _, _ = pipeline
    root = str(settings.root)
    assert main(["export", "--format", "openai", "--out", str(tmp_path / "sft.jsonl"), "--data-root", root]) == 0
    lines = [json.loads(l) for l in (tmp_path / "sft.jsonl").read_text().splitlines()]
    train = pl.read_parquet(settings.local_root / "published" / "sft_dataset" / "current" / "train.parquet")
    assert len(lines) == train.height and {"messages", "tools"} == set(lines[0])
    assert lines[0]["tools"][0]["type"] == "function" and lines[0]["messages"][-1]["role"] == "assistant"
    assert (
        main(
            ["export", "--format", "llamafactory", "--out", str(tmp_path / "lf"), "--data-root", root, "--split", "all"]
        )
        == 0
    )
    info = json.loads((tmp_path / "lf" / "dataset_info.json").read_text())
    assert info["cowork_sft"]["formatting"] == "sharegpt"
    records = json.loads((tmp_path / "lf" / "cowork_sft.json").read_text())
    for r in records:
        roles = [t["from"] for t in r["conversations"]]
        assert all(a in ("human", "observation") for a in roles[0::2]) and all(
            b in ("gpt", "function_call") for b in roles[1::2]
        ), roles


def test_export_writes_only_regular_files_and_replaces_one_only_with_force(pipeline, tmp_path, capsys):
    import os
    import stat

    from cowork_cli.cli import main

    settings, _, _ = pipeline

    def export(out, *more):
        return main(["export", "--format", "openai", "--out", str(out), "--data-root", settings.root, *more])

    # a device: refused, and it stays a device (it once became a 311 KB regular file)
    assert export("/dev/full") == 2 and stat.S_ISCHR(os.stat("/dev/full").st_mode)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert export(fifo) == 2 and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert export(link, "--force") == 2 and link.is_symlink() and target.read_text() == "keep me"
    existing = tmp_path / "sft.jsonl"
    existing.write_text("old")
    assert export(existing) == 2 and existing.read_text() == "old"
    errors = capsys.readouterr().err.splitlines()
    assert errors == [
        "cowork-curate export: error: /dev/full exists and is not a regular file (a folder, device or FIFO): "
        "an export writes only regular files",
        f"cowork-curate export: error: {fifo} exists and is not a regular file (a folder, device or FIFO): "
        "an export writes only regular files",
        f"cowork-curate export: error: {link} is a symbolic link: an export writes only regular files",
        f"cowork-curate export: error: {existing} exists: pass --force to replace it",
    ]
    assert export(existing, "--force") == 0 and existing.read_text().startswith('{"messages"')


def test_a_broken_dataset_fails_its_gate_and_is_not_published(tmp_path, monkeypatch):
    from cowork_assets.datasets import assets as dataset_assets
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_assets.synthetic.generate import generate
    from cowork_cli.runner import ensure_instance, materialize_all

    generate(tmp_path / "raw", trajectories=80, batches=1, seed=3)
    settings = CurateSettings(raw_root=str(tmp_path / "raw"), data_root=str(tmp_path / "d"))
    instance = ensure_instance(tmp_path / "home")
    first = materialize_all(settings, instance, echo=lambda _: None)
    assert first.failed == {}
    good = versions.current(settings.root, "sft_dataset")
    real = dataset_assets.build_sft
    monkeypatch.setattr(
        dataset_assets, "build_sft", lambda *a, **k: (lambda rows: pl.concat([rows, rows.head(1)]))(real(*a, **k))
    )  # a duplicated sample id
    second = materialize_all(settings, instance, echo=lambda _: None)
    assert "sft_candidate:quality_gate (ERROR)" in second.failed_checks
    assert "sample_id" in second.check_details["sft_candidate:quality_gate (ERROR)"]
    assert versions.current(settings.root, "sft_dataset") == good  # still the previous, good version
    assert versions.current(settings.root, "rl_tasks") is not None  # other datasets are unaffected
    monkeypatch.setattr(dataset_assets, "build_sft", real)
    # a settings change publishes a new version; the previous stays readable and is named in the card
    changed = settings.model_copy(update={"validation_fraction": 0.3})
    assert materialize_all(changed, instance, echo=lambda _: None).failed == {}
    new = versions.current(settings.root, "sft_dataset")
    assert new != good and new.startswith("v0002-")
    card = json.loads((settings.local_root / "published" / "sft_dataset" / new / "card.json").read_text())
    assert card["previous_version"] == good
    assert (settings.local_root / "published" / "sft_dataset" / good / "train.parquet").exists()
    # the same content again re-points to the existing version instead of copying it
    assert materialize_all(changed, instance, echo=lambda _: None).failed == {}
    assert versions.current(settings.root, "sft_dataset") == new


def test_tools_kwargs_gives_each_tool_its_service_slice_of_the_state_as_written():
    tools = json.dumps([{"name": "mail_send"}, {"name": "todos_create"}, {"name": "web_search"}, {"no": "name"}])
    state = '{"mail":[{"id":"m_1","amount":1.5e16,"note":"caf\\u00e9 é"}],"todos":[],"cal":{}}'
    assert tools_kwargs(tools, state) == (
        '{"mail_send":{"create_kwargs":{"mail":[{"id":"m_1","amount":1.5e16,"note":"caf\\u00e9 é"}]}},'
        '"todos_create":{"create_kwargs":{"todos":[]}},"web_search":{"create_kwargs":{}}}'
    )
    for not_an_object in ("null", "[1, 2]", '"text"'):
        assert json.loads(tools_kwargs(tools, not_an_object)) == {
            name: {"create_kwargs": {}} for name in ("mail_send", "todos_create", "web_search")
        }


def test_rollouts_publish_without_waiting_for_exclusions(pipeline, pipeline_copy, tmp_path):
    """The UI's runs execute independent steps in parallel, and nothing orders rl_rollouts after exclusions
    (rollouts are not selected): publishing them must not read exclusions, which a first run has not written."""
    import shutil

    import dagster as dg

    from cowork_cli.runner import _run_config, ensure_instance
    from dagster_project.definitions import defs

    settings, copy = pipeline[0], pipeline_copy
    shutil.rmtree(tmp_path / "curated" / "tables" / "exclusions")
    result = defs.resolve_job_def("refresh_corpus").execute_in_process(
        run_config=_run_config(copy),
        instance=ensure_instance(tmp_path / "home"),
        raise_on_error=False,
        asset_selection=[dg.AssetKey("rl_rollouts_candidate"), dg.AssetKey("rl_rollouts")],
    )
    assert result.success
    card = json.loads((tmp_path / "curated" / "published" / "rl_rollouts" / "current" / "card.json").read_text())
    assert {f["step"]: f["remaining"] for f in card["funnel"]} == {
        "parsed trajectories": 300,
        "after holdout": 300,  # the synthetic tasks are no benchmark's
        "published rollouts": _published(settings, "rl_rollouts").height,
    }


def _rollouts_view(**changes) -> pl.DataFrame:
    view = pl.DataFrame(
        {
            "trajectory_id": ["t1", "t2", "t3"],
            "group_id": ["g", "g", "h"],
            "score": [1.0, 0.0, 0.5],
            "group_size": [2, 2, 1],
            "zero_variance": [False, False, True],
            "grpo_advantage": [0.7, -0.7, 0.0],
            "gdpo_advantage": [0.5, -0.5, 0.0],
            "n_checks": [2, 2, 1],
            "held_out": [False, False, False],
        }
    )
    return view.with_columns(**{k: pl.Series(v) for k, v in changes.items()})


def test_suites_run_in_a_helper_process_and_report_each_failed_expectation_exactly():
    from cowork_assets.datasets.suites import SuiteProcess

    with SuiteProcess() as suites:
        assert suites.failures("rl_rollouts", _rollouts_view(), {}) == []
        failures = suites.failures(
            "rl_rollouts", _rollouts_view(trajectory_id=["t1", "t1", "t3"], score=[1.0, 1.5, None]), {}
        )
        # the same process answers again after a failing suite
        assert suites.failures("rl_rollouts", _rollouts_view(), {}) == []
    assert [(f["expectation"], f["column"], f["unexpected"]) for f in failures] == [
        ("expect_column_values_to_be_unique", "trajectory_id", 2),
        ("expect_column_values_to_be_between", "score", 1),
    ]
    assert "1.5" in failures[1]["examples"]


def test_a_suite_that_cannot_run_or_a_helper_that_died_fails_with_its_cause():
    import os
    import signal

    from cowork_assets.datasets.suites import SuiteProcess, SuiteProcessError

    with SuiteProcess() as suites:
        with pytest.raises(SuiteProcessError, match=r"the no_such_dataset suite could not run: FileNotFoundError"):
            suites.failures("no_such_dataset", _rollouts_view(), {})
        os.kill(suites.pid, signal.SIGKILL)
        with pytest.raises(SuiteProcessError, match=r"the Great Expectations process failed \(exit -9\)"):
            suites.failures("rl_rollouts", _rollouts_view(), {})


def test_a_helper_still_alive_serves_the_next_run_in_the_process_and_a_dead_one_does_not():
    from cowork_assets.datasets import suites

    first = suites.suite_process()
    suites.give_back(first)
    assert suites.suite_process() is first  # kept: it has imported Great Expectations already
    other = suites.SuiteProcess()
    suites.give_back(first)
    suites.give_back(other)  # one is kept already: this one is closed
    assert not other.running() and suites.suite_process() is first
    first.close()
    suites.give_back(first)
    fresh = suites.suite_process()
    assert fresh is not first and fresh.running()
    fresh.close()


def test_a_gate_does_not_wait_on_a_helper_the_machine_leaves_no_time_to(monkeypatch):
    """A helper started early imports at the lowest priority; one that has not imported by the time a gate asks (here
    stopped: the most starved it can be), where this user may not raise its priority, is raced by a new one at
    normal priority, and the first ready serves."""
    import os
    import signal

    from cowork_assets.datasets.suites import SuiteProcess, first_ready

    early = SuiteProcess()
    os.kill(early.pid, signal.SIGSTOP)
    with monkeypatch.context() as patched:

        def not_permitted(*_):
            raise PermissionError(1, "Operation not permitted")

        patched.setattr(os, "setpriority", not_permitted)  # a user without CAP_SYS_NICE
        chosen = first_ready(early)
    try:
        assert chosen is not early and not early.running()  # the one left behind is closed
        assert os.getpriority(os.PRIO_PROCESS, chosen.pid) == os.getpriority(os.PRIO_PROCESS, 0)
        assert chosen.failures("rl_rollouts", _rollouts_view(), {}) == []
    finally:
        chosen.close()
    with SuiteProcess() as ready:
        assert ready.ready(timeout=None) and os.getpriority(os.PRIO_PROCESS, ready.pid) == 19
        assert first_ready(ready) is ready  # ready already: no other is started


def _may_raise_priority() -> bool:
    """Whether this process holds CAP_SYS_NICE (bit 23 of its effective capabilities): root on a machine or VM does,
    a container's root only where it is granted."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return False
    found = re.search(r"^CapEff:\s*([0-9a-f]+)", status, re.M)
    return bool(found and int(found.group(1), 16) >> 23 & 1)


@pytest.mark.skipif(not _may_raise_priority(), reason="raising a process's priority takes CAP_SYS_NICE")
def test_a_helper_not_ready_when_a_gate_asks_goes_on_at_normal_priority_where_the_system_allows():
    """Where this user may raise a process's priority (root, most containers), the helper started early is brought
    to normal priority, every thread of it, and serves: Great Expectations is imported once, from where it was."""
    from cowork_assets.datasets.suites import SuiteProcess, first_ready

    early = SuiteProcess()
    try:
        assert not early.ready()  # just started: importing
        assert first_ready(early) is early
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        threads = [int(t) for t in os.listdir(f"/proc/{early.pid}/task")]
        assert [os.getpriority(os.PRIO_PROCESS, t) for t in threads] == [mine] * len(threads)
        assert early.failures("rl_rollouts", _rollouts_view(), {}) == []
    finally:
        early.close()


def test_a_run_never_imports_great_expectations_in_the_process_that_runs_it(tmp_path):
    """Great Expectations takes ~3 s of CPU to import: the gates run it in their helper process."""
    import subprocess
    import sys

    from cowork_assets.synthetic.generate import generate

    default_raw = tmp_path / "raw"  # one small batch: every gate still runs
    generate(default_raw, trajectories=30, batches=1, seed=5)

    script = (
        "import sys; from pathlib import Path; from cowork_cli.runner import ensure_instance, materialize_all; "
        "from cowork_assets.orchestration.resources import CurateSettings; "
        f"s = CurateSettings(raw_root={str(default_raw)!r}, data_root={str(tmp_path / 'd')!r}); "
        f"o = materialize_all(s, ensure_instance(Path({str(tmp_path / 'home')!r})), echo=lambda _: None); "
        "print(o.failed, 'great_expectations' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "{} False"


def test_a_cli_run_starts_the_suites_helper_before_it_imports_the_pipeline(tmp_path):
    """`cowork-curate run` starts the gates' helper first thing, so that it imports Great Expectations while the run
    imports Dagster and the code location: a run with no batch to process reaches its gates within seconds. (Here the
    run stops on a refused --dagster-home once both are under way.) A raw root without batches starts none."""
    import subprocess
    import sys

    from cowork_assets.synthetic.generate import generate

    generate(tmp_path / "raw", trajectories=2, batches=1, seed=5)
    (tmp_path / "empty").mkdir()
    script = (
        "import sys\n"
        "from cowork_assets.datasets import suites\n"
        "started = []\n"
        "class Recorded(suites.SuiteProcess):\n"
        "    def __init__(self, *args, **kwargs):\n"
        "        started.append('dagster' in sys.modules)\n"
        "        super().__init__(*args, **kwargs)\n"
        "suites.SuiteProcess = Recorded\n"
        "from cowork_cli.cli import main\n"
        "status = main(sys.argv[1:])\n"
        "print(status, started, 'dagster' in sys.modules)\n"
    )

    def run(raw: str) -> str:
        args = ["run", "--raw-root", str(tmp_path / raw), "--data-root", str(tmp_path / "out")]
        args += ["--dagster-home", str(tmp_path / raw / "home")]  # inside the raw root: refused
        done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=True)
        return done.stdout.strip().splitlines()[-1]

    assert run("raw") == "2 [False] True"  # started before Dagster was imported; refused after
    assert run("empty") == "2 [] True"


def test_rollout_rows_carry_their_checks_and_a_run_without_checks_an_empty_list():
    """A rollout's per-check rewards and first turns are those of regrade's replay of the run."""
    from cowork_assets.datasets.rl import build_rl_rollouts
    from cowork_assets.validation.regrade import replay_grades

    runs = pl.DataFrame(
        {
            "trajectory_id": ["t1", "t2"],
            "task_id": ["a", "b"],
            "category": ["c", "c"],
            "group_id": [None, None],
            "batch": ["x", "x"],
            "grade_score": [1.0, 0.5],
            "grade_passed": [True, False],
            "grade_checks": ['{"c1": true}', None],
            "task_hash": ["h1", "h2"],
        }
    )
    messages = pl.DataFrame(
        {
            "trajectory_id": ["t1"],
            "message_index": [1],
            "role": ["assistant"],
            "content": ["done: X"],
            "tool_calls": [[]],
            "tool_call_id": [None],
        },
        schema_overrides={
            "message_index": pl.Int32,
            "tool_calls": pl.List(
                pl.Struct({"id": pl.String, "type": pl.String, "name": pl.String, "arguments": pl.String})
            ),
            "tool_call_id": pl.String,
        },
    )
    packages = pl.DataFrame(
        {
            "task_hash": ["h1", "h2"],
            "category": ["c", "c"],
            "checks": ['[{"id": "c1", "type": "keywords_present", "keywords": ["x"]}]', "[]"],
        }
    )
    rows = build_rl_rollouts(runs, replay_grades("x", [(runs, messages)], packages), "group_id", 1e-6, "sample")
    assert rows.select("trajectory_id", "group_id", "checks").to_dicts() == [
        {
            "trajectory_id": "t1",
            "group_id": "a",
            "checks": [
                {
                    "check_id": "c1",
                    "type": "keywords_present",
                    "weight": 1.0,
                    "reward": 1.0,
                    "normalized": 0.0,
                    "first_turn": 1,
                }
            ],
        },
        {"trajectory_id": "t2", "group_id": "b", "checks": []},
    ]


def test_the_same_content_built_again_is_the_same_version_however_its_frames_are_chunked(tmp_path):
    # text enough for many pages, which a column's chunks would otherwise cut differently
    rows = pl.DataFrame({"id": range(3000), "text": [f"sample {i} " * (i % 500) for i in range(3000)]})
    schema = {"train": rows.to_arrow().schema}
    pieces = pl.concat([rows.slice(0, 700), rows.slice(700, 1500), rows.slice(2200)], rechunk=False)
    assert pieces.n_chunks() == 3 and pieces.equals(rows)
    first = pub.write_candidate(tmp_path, "demo", {"train": [rows]}, schema)
    pub.mark_gated(first)
    assert pub.publish(tmp_path, "demo").new
    again = pub.write_candidate(tmp_path, "demo", {"train": [pieces]}, schema)
    assert again.rsplit("/", 1)[-1] == first.rsplit("/", 1)[-1]  # the digest, and so the version's name
    pub.mark_gated(again)
    republished = pub.publish(tmp_path, "demo")
    assert not republished.new and republished.version.startswith("v0001-")


def test_a_coding_task_is_an_rl_row_graded_in_a_sandbox():
    from cowork_assets.datasets.rl import build_rl_tasks
    from cowork_assets.rewards import compute_score
    from cowork_assets.sandbox import sandbox
    from cowork_assets.validation.consistency import package_findings

    state = sandbox(
        "org__repo-7",
        {"repo": "org/repo", "base_commit": "abc", "FAIL_TO_PASS": '["tests/test_a.py::test_x"]', "PASS_TO_PASS": []},
    )
    assert state == {
        "sandbox": {
            "repo": "org/repo",
            "base_commit": "abc",
            "instance_id": "org__repo-7",
            "FAIL_TO_PASS": ["tests/test_a.py::test_x"],  # the JSON text SWE-bench instances hold, as a list
        }
    }
    packages = pl.DataFrame(
        {
            "task_id": ["org__repo-7", "chat-1"],
            "category": ["openhands", "single_turn"],
            "request": ["Fix the bug", "Send it"],
            "tools": ['[{"name": "execute_bash"}]', '[{"name": "mail_send"}]'],
            "checks": ["[]", '[{"id": "sent", "type": "tool_called", "tool": "mail_send"}]'],
            "initial_state": [json.dumps(state), "{}"],
            "index": [0, 1],
        }
    )
    rows = build_rl_tasks(
        packages,
        pl.DataFrame({"task_id": ["org__repo-7"], "system": ["You are a coding agent."]}),
        pl.DataFrame({"task_id": ["org__repo-7", "chat-1"], "pass_rate": [1.0, 0.5]}),
        0.0,
    )
    coding, chat = rows["reward_model"].to_list()
    assert coding == {"style": "sandbox", "ground_truth": json.dumps(state["sandbox"], separators=(",", ":"))}
    assert chat["style"] == "rule"
    assert compute_score("cowork", "any response", json.loads(coding["ground_truth"])) is None  # not decidable
    assert compute_score("cowork", "any response", coding["ground_truth"]) is None
    kinds = {f["kind"] for f in package_findings("org__repo-7", "h", "Fix the bug", "[]", "[]", json.dumps(state))}
    assert "no_checks" not in kinds  # its tests grade it
    assert "no_checks" in {f["kind"] for f in package_findings("t", "h", "r", "[]", "[]", "{}")}


def test_an_atomic_write_never_replaces_a_link_or_a_device(tmp_path):
    import os
    import stat

    from cowork_assets.store.storage import write_text_atomic

    target = tmp_path / "kept.txt"
    target.write_text("keep me")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    for path in (link, "/dev/full"):
        with pytest.raises(FileExistsError, match="is not a regular file"):
            write_text_atomic(path, "new")
    assert link.is_symlink() and target.read_text() == "keep me" and stat.S_ISCHR(os.stat("/dev/full").st_mode)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no scratch file left behind
