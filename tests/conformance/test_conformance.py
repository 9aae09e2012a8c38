"""Every reader against every file of the conformance corpus: real logs of each tool, several versions each, laid
out as the tool writes them (tests/conformance/README.md). Each format folder is ingested as one batch and what the
readers made of each file is compared with the summary `summarize.py` reads from the file by the tool's own
schema. A new tool version is: add its files, run `python -m tests.conformance.summarize --write`, see what
breaks."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from cowork_assets.ingest.batch import ingest_batch
from cowork_assets.ingest.formats import recount_batch, registry
from cowork_assets.store.registry import TABLES
from tests.conformance.summarize import EXPECTED, HERE, READERS, summaries

# Formats with no real file at hand: the native format (ours), chat records (no free-licensed agent run in that
# shape), the agent CLIs whose sessions stay on their users' machines (no public file under a licence was found:
# `test_agent_sessions.py` builds them from each tool's recording code), and the auxiliary files, which are read with
# the runs they grade or equip.
NOT_IN_CORPUS = {"cowork", "openai_chat", "broken_json", "gemini_cli", "goose", "cline", "opencode"} | {
    "tool_definitions",
    "swebench_report",
    "harbor_result",
    "cline_task",
    "opencode_storage",
    "openhands_event_file",
}
ONE_VERSION = {"tau_bench", "openhands_events"}  # one at hand


def test_the_corpus_covers_every_reader_with_more_than_one_version_where_there_is_one():
    """Every reader has real files; each format folder holds one sub-folder per tool version or layout."""
    assert set(READERS) == set(registry()) - NOT_IN_CORPUS
    versions = {fmt: {Path(f).parts[1] for f in json.loads((HERE / fmt / EXPECTED).read_text())} for fmt in READERS}
    assert {fmt for fmt, found in versions.items() if len(found) < 2} == ONE_VERSION, versions


def test_the_expected_summaries_are_the_summarizers_reading_of_the_files():
    for fmt in READERS:
        assert json.loads((HERE / fmt / EXPECTED).read_text()) == summaries(fmt), fmt


def _read(data_root: str, fmt: str) -> dict[str, dict]:
    """What ingest made of each raw file of a batch, in the summary's terms."""
    runs = TABLES["trajectories"].read(data_root, fmt)
    calls = TABLES["tool_calls"].read(data_root, fmt).join(runs.select("trajectory_id", "raw_file"), on="trajectory_id")
    packages = TABLES["task_packages"].read(data_root, fmt).select("task_hash", "request")
    out = {}
    for (raw_file,), group in runs.join(packages, on="task_hash", how="left", maintain_order="left").group_by(
        "raw_file", maintain_order=True
    ):
        mine = calls.filter(pl.col("raw_file") == raw_file)
        passed = group["grade_passed"].to_list()
        grades = ["ungraded" if p is None else "passed" if p else "failed" for p in passed]
        out[raw_file] = {
            "records": group["raw_record"].n_unique(),
            "trajectories": group.height,
            "calls": mine.height,
            "answered": mine.filter(pl.col("observation_index").is_not_null()).height,
            "request": group["request"][0][:60],
            "grades": dict(sorted((g, grades.count(g)) for g in set(grades))),
        }
    return out


@pytest.mark.parametrize("fmt", sorted(READERS))
def test_each_reader_reads_each_file_as_its_tool_wrote_it(tmp_path, fmt):
    expected = json.loads((HERE / fmt / EXPECTED).read_text())
    report = ingest_batch(HERE, fmt, str(tmp_path))
    assert (report.quarantined, report.reasons) == (0, {}), report.reasons
    assert {f for f, _ in report.skipped} <= {f"{fmt}/{EXPECTED}"} | {
        f for f, _ in report.skipped if Path(f).name.startswith(("LICENSE", "SOURCES"))
    }, report.skipped
    assert report.raw_records == recount_batch(HERE, fmt) == report.parsed  # records_accounted_for holds
    assert _read(str(tmp_path), fmt) == expected
