"""Build the DuckDB file from sql/views.sql, and run named queries against it.

The file holds only views over the Parquet tables (no copies of the data), so it is rebuilt in a
moment after every run. It is built under a temporary name and renamed into place, so readers keep
the previous file until the new one is complete.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from cowork_assets.paths import project_dir
from cowork_assets.storage import atomic_path

_VIEW = re.compile(r"CREATE\s+OR\s+REPLACE\s+VIEW\s+(\w+)", re.IGNORECASE)


def view_statements(data_root: Path) -> list[tuple[str, str]]:
    """(view name, SQL) for each statement of sql/views.sql, with the tables folder filled in."""
    text = (project_dir("sql") / "views.sql").read_text()
    tables = str((data_root / "tables").resolve()).replace("'", "''")
    published = str((data_root / "published").resolve()).replace("'", "''")
    out = []
    for statement in text.split(";"):
        body = "\n".join(line for line in statement.splitlines() if not line.strip().startswith("--")).strip()
        if body:
            name = _VIEW.search(body)
            out.append((name.group(1) if name else "?", body.replace("{tables}", tables).replace("{published}", published)))
    return out


def build_warehouse(data_root: Path, db_path: Path) -> tuple[dict[str, int], dict[str, str]]:
    """Create every view whose Parquet files exist. Returns (rows per view, skipped view -> why)."""
    rows, skipped = {}, {}
    with atomic_path(db_path) as tmp:
        con = duckdb.connect(str(tmp))
        try:
            for name, sql in view_statements(data_root):
                try:
                    con.execute(sql)
                    rows[name] = con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
                except duckdb.IOException as exc:  # no Parquet files for this table yet
                    skipped[name] = str(exc).splitlines()[0]
        finally:
            con.close()
    return rows, skipped


def query_names() -> list[str]:
    return sorted(p.stem for p in (project_dir("sql") / "queries").glob("*.sql"))


def named_query(name: str) -> str:
    """The SQL of `sql/queries/<name>.sql`; only files from that folder can be run by name."""
    if name not in query_names():
        raise KeyError(f"no query named {name!r}; available: {', '.join(query_names())}")
    return (project_dir("sql") / "queries" / f"{name}.sql").read_text()


_PARAM = re.compile(r"^--\s*param:\s*(\w+)\s*=\s*(.*?)\s*$", re.MULTILINE)


def query_params(sql: str) -> dict[str, str]:
    """Parameters a named query declares, with defaults: lines `-- param: NAME = DEFAULT`."""
    return dict(_PARAM.findall(sql))


def run_query(db_path: Path, sql: str, params: dict[str, str] | None = None) -> tuple[list[str], list[tuple]]:
    if not db_path.is_file():
        raise FileNotFoundError(f"no DuckDB file at {db_path}; run `cowork-curate run` first")
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        cur = con.execute(sql, params) if params else con.execute(sql)
        return [d[0] for d in cur.description or []], cur.fetchall()
    finally:
        con.close()
