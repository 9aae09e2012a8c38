"""Safe by construction: data is never executed, named queries come only from sql/queries, and paths
given to the CLI cannot escape the roots they name."""

import re
from pathlib import Path

import pytest

from cowork_assets.cli import main
from cowork_assets.datasets import publish as pub

PACKAGE = Path(__file__).resolve().parents[1] / "cowork_assets"


def test_no_code_path_evaluates_or_unpickles_anything():
    pattern = re.compile(r"(?<![.\w])(eval|exec|compile)\(|pickle|marshal|yaml\.load\(")
    offenders = [f"{p.relative_to(PACKAGE)}:{n}" for p in PACKAGE.rglob("*.py")
                 for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert offenders == []


@pytest.mark.parametrize("name", ["../views", "../../etc/passwd", "/etc/passwd", "queries/rows_per_table",
                                  "rows_per_table.sql"])
def test_only_named_queries_from_sql_queries_can_run(name, capsys, tmp_path):
    assert main(["sql", "--db", str(tmp_path / "x.duckdb"), "--query", name]) == 2
    assert f"no query named {name!r}" in capsys.readouterr().err


def test_batches_named_on_the_cli_must_be_folders_of_the_raw_root(tmp_path, capsys, monkeypatch, default_raw):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    for batch in ("../raw", "..", "/etc"):
        assert main(["run", "--raw-root", str(default_raw), "--data-root", str(tmp_path / "d"), "--batch", batch]) == 2
        assert "no batch folder(s)" in capsys.readouterr().err
    assert not (tmp_path / "d" / "tables").exists()


def test_an_ungated_candidate_is_never_published(tmp_path):
    import polars as pl

    frame = pl.DataFrame({"x": [1]})
    pub.stage(tmp_path, "demo", {"train": frame}, {"train": frame.to_arrow().schema})
    with pytest.raises(RuntimeError, match="has not passed its quality gate"):
        pub.publish(tmp_path, "demo")
    assert pub.current(tmp_path, "demo") is None
    pub.mark_gated(pub.candidate(tmp_path, "demo"))
    assert pub.publish(tmp_path, "demo").version.startswith("v0001-")
