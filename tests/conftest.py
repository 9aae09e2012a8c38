"""Shared fixtures: the default synthetic data and one headless materialization of it."""

from __future__ import annotations

import json
import os
import re
import shutil
from functools import cache
from pathlib import Path

import pytest

# Tests write a batch and run it at once: no settle time, unless a test sets one (settings read this on import).
os.environ["COWORK_SETTLE_SECONDS"] = "0"

from cowork_assets.synthetic.generate import generate

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SHARED = ROOT.parent / "shared"
DEFAULT = dict(trajectories=300, batches=3, seed=7)  # what `make run` generates
RAM_DISK = Path("/dev/shm")


def pytest_configure(config: pytest.Config) -> None:
    """Tests' files go to the RAM disk where there is one with room (pytest's own `PYTEST_DEBUG_TEMPROOT`; set it
    to choose another place). Every pipeline run commits Dagster's SQLite events and this code's atomic writes with
    fsync, which a RAM disk skips: a quarter of a run's time in a test. Nothing a test checks depends on it."""
    roomy = os.access(RAM_DISK, os.W_OK) and shutil.disk_usage(RAM_DISK).free >= 8 << 30
    if roomy and "PYTEST_DEBUG_TEMPROOT" not in os.environ:
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(RAM_DISK)
    config.addinivalue_line("markers", "e2e: runs the pipeline through Dagster, the CLI or a trainer")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


# The longest modules start first, longest first (their summed durations in `pytest --durations=0`), so that
# the test workers (pytest-xdist, one module per worker at a time) finish together instead of one waiting on
# the other's last long module. pyproject's `--no-loadscope-reorder` keeps this order: without it xdist starts the
# modules with the most tests first, and these have few.
LONGEST_FIRST = (
    "test_whole_batches.py",
    "test_deployment.py",
    "test_deployment_by_hand.py",
    "test_object_store.py",
    "test_ui_browser.py",
    "test_hostile.py",
    "test_automation_live.py",
    "test_gate_rules.py",
    "test_harness.py",
    "test_concurrency.py",
    "test_datasets.py",
    "test_check_failures.py",
    "test_evidence.py",
    "test_code_changes.py",
    "test_pipeline.py",
    "test_realdata.py",
    "test_trainers.py",
    "test_damage.py",
    "test_real_harness_logs.py",
    "test_run_health.py",
    "test_trainer_tokenizer.py",
    "test_crash_resume.py",
)


# A test is end-to-end (`-m e2e`; `make test-fast` runs the others) when it runs the pipeline through Dagster, the
# CLI or a trainer: it takes the shared materialization, or its module starts a run of its own.
PIPELINE_FIXTURES = frozenset({"pipeline", "pipeline_copy", "every_reader", "default_materialized"})
STARTS_A_RUN = re.compile(
    r"materialize_all\(|materialized\(|\bmaterialize\(|origin import execute|execute_in_process|\.venv-train|"
    r"\bsubprocess\b.*\bcowork-curate\b|\bBIN\b|dagster dev|cli import main|\bbench\("
)


@cache
def _starts_a_run(module: Path) -> bool:
    return STARTS_A_RUN.search(module.read_text()) is not None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if PIPELINE_FIXTURES & set(getattr(item, "fixturenames", ())) or _starts_a_run(item.path):
            item.add_marker(pytest.mark.e2e)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


@pytest.fixture(scope="session")
def default_raw(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("raw") / "raw"
    generate(out, **DEFAULT)
    return out


@pytest.fixture(scope="session")
def manifest(default_raw) -> dict:
    return json.loads((default_raw / "manifest.json").read_text())


@pytest.fixture(scope="session")
def labels(default_raw) -> list[dict]:
    return read_jsonl(default_raw / "labels.jsonl")


def materialized(raw: Path, base: Path):
    """(settings, instance, outcome) of the `make run` path: every asset for every batch of `raw` through Dagster,
    on a new instance and data root under `base`."""
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    settings = CurateSettings(raw_root=str(raw), data_root=str(base / "curated"))
    instance = ensure_instance(base / "dagster_home")
    return settings, instance, materialize_all(settings, instance, echo=lambda _: None)


@pytest.fixture(scope="session")
def pipeline(default_raw, tmp_path_factory):
    """The default data materialized once per test worker, shared: a test that launches runs on it or changes its
    data uses a materialization of its own (`materialized`) or `pipeline_copy`."""
    return materialized(default_raw, tmp_path_factory.mktemp("pipeline"))


@pytest.fixture()
def pipeline_copy(pipeline, tmp_path):
    """The settings of the default materialization over a copy of its data root (`tmp_path / "curated"`), for a test
    that changes the data."""
    settings, _, _ = pipeline
    shutil.copytree(settings.local_root, tmp_path / "curated", symlinks=True)
    return type(settings)(**settings.model_dump() | {"data_root": str(tmp_path / "curated")})
