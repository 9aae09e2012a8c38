"""Safe by construction: data is never executed, named queries come only from sql/queries, and paths
given to the CLI cannot escape the roots they name."""

import re
from pathlib import Path

import pytest

from cowork_assets.datasets import publish as pub
from cowork_assets.store import versions
from cowork_cli.cli import main
from tests.conftest import ROOT

PACKAGE = ROOT / "cowork_assets"


def test_no_code_path_evaluates_or_unpickles_anything():
    pattern = re.compile(r"(?<![.\w])(eval|exec|compile)\(|pickle|marshal|yaml\.load\(")
    offenders = [
        f"{p.relative_to(PACKAGE)}:{n}"
        for p in PACKAGE.rglob("*.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "name", ["../views", "../../etc/passwd", "/etc/passwd", "queries/rows_per_table", "rows_per_table.sql"]
)
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
    pub.write_candidate(tmp_path, "demo", {"train": frame}, {"train": frame.to_arrow().schema})
    with pytest.raises(RuntimeError, match="has not passed its quality gate"):
        pub.publish(tmp_path, "demo")
    assert versions.current(tmp_path, "demo") is None
    pub.mark_gated(versions.candidate(tmp_path, "demo"))
    assert pub.publish(tmp_path, "demo").version.startswith("v0001-")


def _snapshot(root: Path) -> dict[str, bytes]:
    import hashlib

    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).digest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def test_the_sql_modes_read_the_data_root_and_nothing_else(pipeline, tmp_path, capsys):
    """An adversarial list: every statement is refused with one line and exit 2, and afterwards every file of
    the data root (tables, published datasets, the DuckDB file) is byte-identical and no file appeared."""
    settings, _, _ = pipeline
    root = settings.local_root
    db = str(settings.warehouse_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    escape = root / "tables" / "zz_escape"
    escape.symlink_to(outside)  # a symlink inside the data root that leads out of it
    current = root / "published" / "sft_dataset" / "current" / "train.parquet"
    out = tmp_path / "written"
    attacks = [
        f"COPY (SELECT 1) TO '{out}.csv'",
        f"COPY (SELECT 1) TO '{out}.parquet' (FORMAT parquet)",
        f"COPY trajectories TO '{current}' (FORMAT parquet)",
        f"COPY (SELECT 1) TO '{db}'",
        f"EXPORT DATABASE '{out}'",
        f"IMPORT DATABASE '{outside}'",
        "INSTALL httpfs",
        "LOAD httpfs",
        f"ATTACH '{out}.duckdb' AS x",
        "DETACH cowork",
        "CREATE TABLE t AS SELECT 1",
        "CREATE VIEW v AS SELECT 1",
        "DROP VIEW trajectories",
        "SET enable_external_access = true",
        f"SET profiling_output = '{out}.txt'",
        "PRAGMA enable_profiling",
        "CREATE SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_json('/etc/os-release')",
        f"SELECT * FROM read_parquet('{outside}/x.parquet')",
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM read_blob('/etc/hostname')",
        "SELECT * FROM glob('/etc/*')",
        f"SELECT * FROM read_text('{root}/tables/../../outside/secret.txt')",
        f"SELECT * FROM read_text('{escape}/secret.txt')",
        "SELECT 1; COPY (SELECT 1) TO 'x.csv'",
        "CHECKPOINT",
        "CALL pragma_version()",
    ]
    try:
        before = _snapshot(root)
        for sql in attacks:
            assert main(["sql", "--db", db, sql]) == 2, sql
            err = capsys.readouterr().err
            assert err.startswith("cowork-curate sql: error: refused: ") and err.count("\n") == 1, (sql, err)
        assert _snapshot(root) == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["outside"] and list(outside.iterdir()) == [
            outside / "secret.txt"
        ]
    finally:
        escape.unlink()
    # What the modes are for still works: the tables, the published datasets and direct reads of the root.
    assert main(["sql", "--db", db, "SELECT count(*) FROM sft_dataset"]) == 0
    assert (
        main(["sql", "--db", db, f"SELECT count(*) FROM read_parquet('{root}/tables/trajectories/*/*.parquet')"]) == 0
    )
    assert main(["sql", "--db", db, "--query", "quarantine_reasons"]) == 0


def test_a_query_stops_at_its_time_and_memory_limits_with_one_line(pipeline, capsys):
    import time

    from cowork_cli.cli import main

    settings, _, _ = pipeline
    sql = ["sql", "--data-root", settings.root]
    started = time.monotonic()
    assert main([*sql, "SELECT sum(hash(range)) FROM range(1000000000000)", "--timeout", "1"]) == 2
    assert time.monotonic() - started < 30  # it ran until killed before
    many = "SELECT string_agg(range::VARCHAR, ',') FROM range(100000000)"
    assert main([*sql, many, "--memory-limit", "100MB"]) == 2
    assert main([*sql, "SELECT 1", "--memory-limit", "lots"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "cowork-curate sql: error: query stopped at its time limit of 1 s (--timeout)",
        "cowork-curate sql: error: query stopped at its memory limit of 100MB (--memory-limit)",
        "cowork-curate sql: error: --memory-limit must be a size such as 500MB or 2GB, got 'lots'",
    ]


def test_a_large_result_streams_past_and_spills_outside_the_data_root(pipeline, capsys):
    """Ten million rows sorted under a 100 MB limit: only the 200 shown come into Python (the rest are counted as
    Arrow batches stream past: Python's own allocations stay a few MB, where fetching every row took over a GB),
    and what DuckDB spills goes to a temporary folder that is removed, never the data root."""
    import tracemalloc

    from cowork_cli.cli import main

    settings, _, _ = pipeline
    spilled = lambda: sorted(  # noqa: E731
        p for p in settings.local_root.rglob("*") if "cowork-sql" in p.name or p.suffix == ".tmp"
    )
    sql = "SELECT range AS n, hash(range) AS h FROM range(10000000) ORDER BY h"  # sorting it spills
    capsys.readouterr()
    tracemalloc.start()
    try:
        assert main(["sql", "--data-root", settings.root, sql, "--memory-limit", "100MB"]) == 0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 + 200 + 2 and lines[-2:] == ["... 9999800 more rows", "(10000000 rows)"]
    assert peak < 50 << 20  # bytes Python allocated: not ten million tuples
    assert spilled() == []


def test_what_a_killed_query_spilled_is_removed_by_the_next_command(pipeline, capsys):
    """A query killed with SIGKILL while it spills leaves its files in its own scratch folder under the data
    root, never in a shared /tmp; the next `sql` removes them."""
    import os
    import signal
    import subprocess
    import sys
    import time

    settings, _, _ = pipeline
    sql = "SELECT range AS n, hash(range) AS h FROM range(100000000) ORDER BY h"
    args = ["sql", "--data-root", settings.root, sql, "--memory-limit", "100MB", "--timeout", "120"]
    query = subprocess.Popen([sys.executable, "-m", "cowork_cli.cli", *args], stdout=subprocess.DEVNULL)
    folder = settings.local_root / ".scratch" / str(query.pid)
    deadline = time.monotonic() + 60
    while not [p for p in folder.rglob("*") if p.is_file()] and time.monotonic() < deadline and query.poll() is None:
        time.sleep(0.1)
    os.kill(query.pid, signal.SIGKILL)
    query.wait()
    assert [p for p in folder.rglob("*") if p.is_file()]  # DuckDB's spill files, left by the kill
    assert main(["sql", "--data-root", settings.root, "SELECT 1 AS one"]) == 0
    assert not folder.exists() and capsys.readouterr().out.splitlines()[-1] == "(1 rows)"
