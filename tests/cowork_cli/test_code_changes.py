"""One meaning of "the code changed": the source on disk, committed or not. A batch's fingerprint (what `cowork-curate
run` resumes by) hashes the code of its per-batch assets as their Dagster code versions do: an edit to it redoes
the batches, an edit to a cross-batch stage, the docs or the synthetic generator does not."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from cowork_assets.runtime.code_versions import BATCH_MODULES, ROOT, _read_by, source_closure
from cowork_assets.synthetic.generate import generate


def _copy(to: Path) -> Path:
    """The package and the project folders it reads, as a checkout lays them out."""
    for name in ("expectations", "sql"):
        shutil.copytree(ROOT / name, to / name)
    return Path(
        shutil.copytree(ROOT / "cowork_assets", to / "cowork_assets", ignore=shutil.ignore_patterns("__pycache__"))
    )


def _edit(file: Path) -> None:
    file.write_text(file.read_text() + "\n# edited\n")


def _files(*modules: str) -> set[str]:
    return {p.relative_to(ROOT).as_posix() for m in modules for p in source_closure(m) for p in (p, *_read_by(p))}


def test_a_batch_runs_the_code_its_version_hashes_and_nothing_else():
    from dagster_project.definitions import defs
    from dagster_project.presentation import defining_modules

    graph = defs.resolve_asset_graph()
    per_batch = {k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).partitions_def is not None}
    assert set(BATCH_MODULES) == {defining_modules()[name] for name in per_batch - {"raw_batches"}}
    batch = _files(*BATCH_MODULES)
    assert {"cowork_assets/curation/budget.py", "cowork_assets/ingest/formats/codex.py"} <= batch
    assert {"cowork_assets/trainers/templates/qwen2.5.jinja", "cowork_assets/tokens/__init__.py"} <= batch
    assert "cowork_assets/datasets/card.py" not in batch and "cowork_assets/synthetic/generate.py" not in batch
    datasets = _files("cowork_assets.datasets.assets")
    assert "expectations/sft_dataset.json" in datasets and "sql/views.sql" in _files("cowork_assets.warehouse.assets")
    assert not {f for f in batch | datasets if f.endswith(".md")}


def test_an_uncommitted_edit_to_a_stage_redoes_the_batches_and_a_cross_batch_one_does_not(tmp_path):
    """The CLI in a fresh process on a copy of the package, as a user's edited checkout runs."""
    generate(tmp_path / "raw", trajectories=6, batches=1, seed=3)
    source = _copy(tmp_path / "src")
    repo = Path(__file__).resolve().parents[2]  # cowork_cli and dagster_project: only the package is a copy
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "src"), str(repo)])}
    args = ["--raw-root", str(tmp_path / "raw"), "--data-root", str(tmp_path / "out")]
    args += ["--dagster-home", str(tmp_path / "home")]
    code = "import sys; from cowork_cli.cli import main; sys.exit(main(sys.argv[1:]))"

    def run() -> str:
        done = subprocess.run(
            [sys.executable, "-c", code, "run", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    assert "batch 2026-11-29-teacher-a: ok" in run()
    _edit(source / "datasets" / "card.py")  # only the cross-batch datasets: every batch stays
    assert "up to date" in run()
    _edit(source / "curation" / "budget.py")
    redone = run()
    assert "up to date" not in redone and "batch 2026-11-29-teacher-a: ok" in redone
