"""`tokenizer`: a local Hugging Face tokenizer folder. Each published SFT row's `tokens` is then the length of its
rendering by that tokenizer's chat template, counted here independently (the plain reference template through
Jinja, the tokenizer through `tokenizers`); a folder that is not a tokenizer is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.synthetic.generate import generate
from cowork_assets.trainers import chat_template, for_chat_template
from tests.conftest import read_jsonl
from tests.test_rewards import render

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def _tokenizer(folder: Path, texts: list[str], config: dict) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=SPECIAL,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    folder.mkdir(parents=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return tok


@pytest.mark.parametrize("named", [False, True])
def test_tokens_are_the_length_of_the_trainers_rendering(tmp_path, named):
    from cowork_cli.runner import ensure_instance, materialize_all

    generate(tmp_path / "raw", trajectories=30, batches=1, seed=4)
    texts = [json.dumps(r) for f in (tmp_path / "raw").rglob("*.jsonl") for r in read_jsonl(f)]
    template = chat_template("qwen2.5.jinja")  # with {% generation %} marks, as trainers are given it
    templates = [{"name": "default", "template": template}, {"name": "rag", "template": "x"}] if named else template
    tok = _tokenizer(tmp_path / "tok", texts, {"chat_template": templates, "eos_token": "<|im_end|>"})
    settings = CurateSettings(
        raw_root=str(tmp_path / "raw"), data_root=str(tmp_path / "out"), tokenizer=str(tmp_path / "tok")
    )
    assert materialize_all(settings, ensure_instance(tmp_path / "home"), echo=lambda _: None).failed == {}
    sft = pl.read_parquet(tmp_path / "out" / "published" / "sft_dataset" / "current" / "*.parquet")
    assert sft.height > 5
    for messages, tools, tokens in sft.select("messages", "tools", "tokens").iter_rows():
        text = render("qwen2.5.jinja", *for_chat_template(messages, tools))  # tests/templates: no generation marks
        assert tokens == len(tok.encode(text, add_special_tokens=False).ids)
    card = (tmp_path / "out" / "published" / "CARD.md").read_text()
    assert "Tokens of each row as the `tokenizer`'s chat template renders it" in card


def test_a_folder_that_is_not_a_tokenizer_is_refused_in_one_line(tmp_path):
    with pytest.raises(ValueError, match="has no tokenizer.json"):
        CurateSettings(raw_root=str(tmp_path), data_root=str(tmp_path / "o"), tokenizer=str(tmp_path))
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ValueError, match="has no chat template"):
        CurateSettings(raw_root=str(tmp_path), data_root=str(tmp_path / "o"), tokenizer=str(tmp_path))


def test_the_token_budget_counts_the_template_as_the_trainer_renders_it(tmp_path):
    """A sample whose texts fit the budget but whose rendering (role markup, the tool list) does not is over it:
    the budget row it is dropped for, and every published row, are counted as the trainer renders them."""
    from cowork_cli.runner import ensure_instance, materialize_all

    generate(tmp_path / "raw", trajectories=30, batches=1, seed=4)
    texts = [json.dumps(r) for f in (tmp_path / "raw").rglob("*.jsonl") for r in read_jsonl(f)]
    _tokenizer(tmp_path / "tok", texts, {"chat_template": chat_template("qwen2.5.jinja"), "eos_token": "<|im_end|>"})
    home = ensure_instance(tmp_path / "home")

    def publish(out: str, **budget) -> pl.DataFrame:
        settings = CurateSettings(
            raw_root=str(tmp_path / "raw"), data_root=str(tmp_path / out), tokenizer=str(tmp_path / "tok"), **budget
        )
        assert materialize_all(settings, home, echo=lambda _: None).failed == {}
        return pl.read_parquet(tmp_path / out / "published" / "sft_dataset" / "current" / "*.parquet")

    unbounded = publish("all").sort("tokens")
    tok = Tokenizer.from_file(str(tmp_path / "tok" / "tokenizer.json"))
    texts_only = {
        r["trajectory_id"]: sum(
            len(tok.encode("".join(filter(None, [m["reasoning_content"], m["content"]]))).ids) for m in r["messages"]
        )
        for r in unbounded.iter_rows(named=True)
    }
    middle = unbounded.row(unbounded.height // 2, named=True)
    budget = middle["tokens"] - 1
    assert texts_only[middle["trajectory_id"]] < budget  # its texts alone would fit
    # Half the samples go: the budget check (rightly) fails, and is overridden to see what is published.
    bounded = publish("bounded", token_budget=budget, budget_policy="drop", publish_despite_failed_checks=True)
    assert middle["trajectory_id"] not in bounded["trajectory_id"].to_list()
    assert 0 < bounded.height < unbounded.height
    assert bounded["tokens"].max() <= budget
    stats = pl.read_parquet(tmp_path / "bounded" / "tables" / "sample_stats" / "**" / "*.parquet")
    dropped = stats.filter(pl.col("trajectory_id") == middle["trajectory_id"]).row(0, named=True)
    assert dropped["verdict"] == "dropped" and dropped["tokens_after"] > budget
