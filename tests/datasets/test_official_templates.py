"""Published SFT rows under the official chat templates of the open model families (tests/official_templates.py),
rendered by transformers as TRL renders them (tests/trainers/official_templates.py, in .venv-train): the default
synthetic data and the real files of every reader (the conformance corpus), with the `tokenizer` set to Qwen3's own
folder and a token budget. A row its template cannot render is excluded with the template's error; its batch and
the other rows go on."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.store.storage import plain
from tests.conftest import ROOT
from tests.official_templates import FAMILIES, LLAMA_3_1, QWEN3, available, tokenizer_folder

TRAIN_PYTHON = ROOT / ".venv-train" / "bin" / "python"
CONFORMANCE = ROOT / "tests" / "conformance"
TOKEN_BUDGET, CODING_TOKEN_BUDGET = 6000, 12000


@pytest.fixture(scope="module", autouse=True)
def templates_installed():
    if not (TRAIN_PYTHON.exists() and available()):
        if os.environ.get("CI"):
            pytest.fail(f"{TRAIN_PYTHON} or its official templates are missing: `make test` builds them")
        pytest.skip("the trainer environment is not built (make test builds .venv-train)")


def _every_reader(raw: Path) -> Path:
    """The conformance corpus's real files, one batch per reader, laid out as their tools wrote them."""
    for reader in sorted(p for p in CONFORMANCE.iterdir() if p.is_dir() and not p.name.startswith("_")):
        for f in reader.rglob("*"):
            if f.is_file() and not f.name.startswith("LICENSE") and f.name != "expected.json":
                target = raw / reader.name / f.relative_to(reader)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(f, target)
    return raw


def _materialized(work: Path, tokenizer: Path, **settings) -> CurateSettings:
    from cowork_cli.runner import ensure_instance, materialize_all

    settings = CurateSettings(
        raw_root=str(_every_reader(work / "raw")),
        data_root=str(work / "curated"),
        accept_ungraded=True,
        tokenizer=str(tokenizer),
        **settings,
    )
    assert materialize_all(settings, ensure_instance(work / "home"), echo=lambda _: None).failed == {}
    return settings


def _rendered(work: Path, *roots: str) -> dict:
    out = work / "rendered.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(work / "hf")}
    done = subprocess.run(
        [str(TRAIN_PYTHON), str(ROOT / "tests" / "trainers" / "official_templates.py"), str(out), *roots],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(out.read_text())


def _sft(settings: CurateSettings) -> pl.DataFrame:
    return plain(pl.read_parquet(settings.local_root / "published" / "sft_dataset" / "current" / "*.parquet"))


@pytest.fixture(scope="module")
def every_reader(tmp_path_factory) -> CurateSettings:
    """Every reader's real files, counted in Qwen3's own tokenizer under token budgets that trim and drop some."""
    return _materialized(
        tmp_path_factory.mktemp("every-reader"),
        QWEN3,
        token_budget=TOKEN_BUDGET,
        category_token_budgets={"coding": CODING_TOKEN_BUDGET},
    )


@pytest.fixture(scope="module")
def gemma(tmp_path_factory) -> CurateSettings:
    """Every reader's real files counted by another family's template (Gemma 4's) in the same tokenizer."""
    work = tmp_path_factory.mktemp("gemma")
    return _materialized(work, tokenizer_folder(work / "tokenizer", "gemma-4"), token_budget=TOKEN_BUDGET)


@pytest.fixture(scope="module")
def rendered(pipeline, every_reader, gemma, tmp_path_factory) -> dict:
    default, _, _ = pipeline
    facts = _rendered(tmp_path_factory.mktemp("rendered"), default.root, every_reader.root, f"{gemma.root}=gemma-4")
    return {"default": facts[default.root], "every_reader": facts[every_reader.root], "gemma": facts[gemma.root]}


@pytest.mark.parametrize("corpus", ["default", "every_reader"])
def test_every_published_row_renders_under_every_official_template(rendered, corpus):
    facts = rendered[corpus]
    assert facts["rows"] > 40
    assert set(facts["failures"]) == set(FAMILIES)
    assert {family: failed for family, failed in facts["failures"].items() if failed} == {}
    # a row that calls no tool is rendered with no instructions to call one (text-protocol runs: shell blocks)
    assert facts["instructed"] == []


@pytest.mark.parametrize("corpus", ["every_reader", "gemma"])
def test_with_the_tokenizer_set_tokens_are_the_rendered_length_and_within_the_budget(rendered, corpus, request):
    counted = rendered[corpus]["tokens"]
    assert len(counted) > 20 and {sample: pair for sample, pair in counted.items() if pair[0] != pair[1]} == {}
    settings = request.getfixturevalue(corpus)
    sft = _sft(settings).with_columns(coding=pl.col("category").is_in(list(_coding())))
    coding_budget = CODING_TOKEN_BUDGET if corpus == "every_reader" else 65_536  # the default's for coding
    budget = pl.when(pl.col("coding")).then(coding_budget).otherwise(TOKEN_BUDGET)
    assert sft.filter(pl.col("tokens") > budget).height == 0
    stats = pl.read_parquet(settings.local_root / "tables" / "sample_stats" / "*" / "*.parquet")
    assert stats.filter(pl.col("verdict").is_in(["trimmed", "dropped"])).height > 0  # the budget bit


def _coding() -> frozenset[str]:
    from cowork_assets.ingest.formats import coding_categories

    return frozenset(coding_categories())


def test_text_protocol_rows_publish_no_tool_list_in_native_form(every_reader):
    sft = _sft(every_reader)
    native = sft.filter(pl.col("batch").is_in(["swe_agent", "mini_swe_agent"]), pl.col("tools") == "[]")
    assert native.height > 0
    for messages in native["messages"]:
        assert not any(m["tool_calls"] for m in messages)  # the answers are shell blocks, as the agent wrote them


def test_a_row_its_template_cannot_render_is_excluded_and_its_batch_goes_on(tmp_path):
    """Llama 3.1's template renders one call per turn: runs with parallel calls are excluded, with its error."""
    settings = _materialized(tmp_path, tokenizer_folder(tmp_path / "llama", LLAMA_3_1))
    exclusions = pl.read_parquet(settings.local_root / "tables" / "exclusions" / "*" / "*.parquet")
    refused = exclusions.filter(pl.col("criterion") == "chat_template")
    assert refused.height > 0
    assert set(refused["detail"]) == {
        "the tokenizer's chat template cannot render it: TemplateError: This model only supports single tool-calls "
        "at once!"
    }
    sft = _sft(settings)
    assert sft.height > 20 and not set(sft["trajectory_id"]) & set(refused["trajectory_id"])
    for messages in sft["messages"]:  # what is published is what the template renders
        assert all(len(m["tool_calls"] or []) <= 1 for m in messages)
    card = json.loads((settings.local_root / "published" / "sft_dataset" / "current" / "card.json").read_text())
    assert "chat_template" in json.dumps(card)
    markdown = (settings.local_root / "published" / "sft_dataset" / "current" / "card.md").read_text()
    assert "Text-protocol runs are published as their agents acted, with no tool list" in markdown
