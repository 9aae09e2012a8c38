"""The shared `realdata/round4/` logs, each folder dropped in as one batch with no override, as a new user does:
every file is read, every main-line call the raw file answers is answered, calls kept equal the raw file's, grades
equal the SWE-bench reports, every record is accounted for, and the resolved mini-swe-agent runs are published.
The raw side of each comparison is `tests/conformance/summarize.py`, which reads the files by the tools' own
schemas. Skipped when ../shared/realdata/round4 is absent."""

from __future__ import annotations

import shutil

import polars as pl
import pytest

from cowork_assets.ingest.batch import ingest_batch
from cowork_assets.ingest.formats import recount_batch
from cowork_assets.store.registry import TABLES
from tests.conformance import summarize
from tests.conftest import SHARED

ROUND4 = SHARED / "realdata" / "round4"
pytestmark = pytest.mark.skipif(not ROUND4.is_dir(), reason="../shared/realdata/round4 is absent")
FORMAT_OF = {
    "claude_code_spotter": "claude_code",
    "codex_codemie": "codex",
    "inspect_ai_more": "inspect_ai",
    "mini_swe_agent_v2": "mini_swe_agent",
    "openhands_more": "openhands",
    "sweagent_more": "swe_agent",
}


@pytest.mark.parametrize("batch", sorted(FORMAT_OF))
def test_every_round4_file_is_read_as_its_tool_wrote_it(tmp_path, batch):
    fmt = FORMAT_OF[batch]
    report = ingest_batch(ROUND4, batch, str(tmp_path))
    assert (report.quarantined, dict(report.reasons)) == (0, {})
    assert all(f.rsplit("/", 1)[-1].startswith(("LICENSE", "SOURCE")) for f, _ in report.skipped), report.skipped
    assert report.formats == {fmt: len(report.files)}
    assert recount_batch(ROUND4, batch) == report.raw_records == report.parsed  # records_accounted_for
    runs = TABLES["trajectories"].read(str(tmp_path), batch)
    calls = (
        TABLES["tool_calls"]
        .read(str(tmp_path), batch)
        .join(runs.select("trajectory_id", "raw_file"), on="trajectory_id")
    )
    for raw_file in report.files:
        path = ROUND4 / raw_file
        raw = summarize.READERS[fmt](path, ROUND4 / batch)
        mine = calls.filter(pl.col("raw_file") == raw_file)
        kept = runs.filter(pl.col("raw_file") == raw_file)
        assert mine.height == raw["calls"], raw_file  # compaction included: no call left out
        assert mine["observation_index"].is_not_null().sum() == raw["answered"], raw_file
        assert kept.height == raw["trajectories"], raw_file
        grades = kept["grade_passed"].to_list()
        assert {g: n for g, n in raw["grades"].items()} == {
            g: sum(1 for p in grades if ("ungraded" if p is None else "passed" if p else "failed") == g)
            for g in raw["grades"]
        }, raw_file


def test_the_resolved_mini_swe_agent_runs_are_published(tmp_path):
    from cowork_assets.settings import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    shutil.copytree(ROUND4 / "mini_swe_agent_v2", tmp_path / "raw" / "mini_swe_agent_v2")
    settings = CurateSettings(raw_root=str(tmp_path / "raw"), data_root=str(tmp_path / "curated"))
    outcome = materialize_all(settings, ensure_instance(tmp_path / "home"), echo=lambda _: None)
    assert outcome.failed == {}
    sft = pl.read_parquet(tmp_path / "curated" / "published" / "sft_dataset" / "current" / "*.parquet")
    resolved = {i for i, passed in summarize._reports(ROUND4 / "mini_swe_agent_v2").items() if passed}
    assert len(resolved) == 6 and set(sft["task_id"]) == resolved
    rl = pl.read_parquet(tmp_path / "curated" / "published" / "rl_tasks" / "current" / "*.parquet")
    assert rl.height == 13 and set(rl["reward_model"].struct.field("style")) == {"sandbox"}  # each names its image
