"""Build the DuckDB file from sql/views.sql, and run named queries against it.

The file holds only views over the Parquet tables (no copies of the data), so it is rebuilt in a
moment after every run. It is built under a temporary name and renamed into place, so readers keep
the previous file until the new one is complete. When the data root is an object store the views
read `s3://...` URIs: our connections read them through pyarrow's S3 filesystem (so no DuckDB
extension has to be downloaded); a stock `duckdb` shell reads them with its httpfs extension.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from cowork_assets.runtime import scratch
from cowork_assets.runtime.paths import project_dir
from cowork_assets.store.storage import atomic_path, is_remote, join, normalize_root
from cowork_assets.warehouse.object_store import object_store

_VIEW = re.compile(r"CREATE\s+OR\s+REPLACE\s+VIEW\s+(\w+)", re.IGNORECASE)


def _lineage_values() -> str:
    from cowork_assets.orchestration.lineage import lineage_rows

    return ", ".join("(" + ", ".join("'" + v.replace("'", "''") + "'" for v in row) + ")" for row in lineage_rows())


def table_view(table, data_root: str) -> str:
    """The view of a registered table over the files that hold its rows (`Table.sources`); one that has no
    files yet (a dataset never published) reads a folder that does not exist, and `build_warehouse` skips it."""
    try:
        files = table.sources(data_root)
    except FileNotFoundError:
        files = [join(data_root, "published", table.name, "unpublished", "*.parquet")]
    listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    return f"CREATE OR REPLACE VIEW {table.name} AS SELECT * FROM read_parquet([{listed}], union_by_name = true)"


def view_statements(data_root: str) -> list[tuple[str, str]]:
    """(view name, SQL): one view per registered table (`table_view`), then each statement of sql/views.sql,
    with the folders filled in."""
    from cowork_assets.store.registry import in_warehouse

    root = normalize_root(data_root)
    out = [(t.name, table_view(t, root)) for t in in_warehouse()]
    tables, published = (join(root, part).replace("'", "''") for part in ("tables", "published"))
    for statement in (project_dir("sql") / "views.sql").read_text().split(";"):
        body = "\n".join(line for line in statement.splitlines() if not line.strip().startswith("--")).strip()
        if body:
            name = _VIEW.search(body)
            body = (
                body.replace("{tables}", tables)
                .replace("{published}", published)
                .replace("{root}", root.replace("'", "''"))
                .replace("{column_lineage}", _lineage_values())
            )
            out.append((name.group(1) if name else "?", body))
    return out


def build_warehouse(data_root: str, db_path: Path, count: bool = True) -> tuple[dict[str, int | None], dict[str, str]]:
    """Create every view whose Parquet files exist. Returns (rows per view (None unless `count`), skipped view ->
    why)."""
    rows, skipped = {}, {}
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(db_path) as tmp:
        con = duckdb.connect(str(tmp))
        store = object_store(con, data_root)
        try:
            for name, sql in view_statements(data_root):
                if store:  # a view and its count read the files as they are when the view is made
                    store.forget()
                try:
                    con.execute(sql)
                    rows[name] = con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] if count else None
                except duckdb.IOException as exc:  # no Parquet files for this table yet
                    skipped[name] = str(exc).splitlines()[0]
        finally:
            con.close()
    return rows, skipped


def queryable(data_root: str, db_path: Path) -> Path:
    """The DuckDB file to query `data_root` through. A local data root's is the file its last run built. A data
    root on an object store is read from machines other than the one that built a file, and other nodes publish
    to it: there the views are rebuilt from the store's current files into this machine's work folder first."""
    root = normalize_root(data_root)
    if is_remote(root):
        rows, _ = build_warehouse(root, db_path, count=False)
        if "trajectories" not in rows:
            raise FileNotFoundError(f"no tables in {root} yet; run `cowork-curate run` with this data root first")
    return db_path


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


class QueryRefused(ValueError):
    """A query the read-only SQL modes will not run (a write, a setting, a file outside the data root, ...)."""


READABLE = ("tables", "published")  # what a query may read, under the data root


SQL_TIMEOUT_SECONDS = 60.0
SQL_MEMORY_LIMIT = "2GB"


def confined(
    db_path: Path, data_root: str | None = None, memory_limit: str = SQL_MEMORY_LIMIT, spill: str | None = None
) -> duckdb.DuckDBPyConnection:
    """A read-only connection that can read the data root's tables and published datasets and nothing else:
    the file opened read-only, file access limited to those folders (DuckDB resolves `..` and symlinks
    before it checks), no extension installed or loaded, and the configuration locked so no query can
    undo any of it. The data root is the one the DuckDB file was built for."""
    con = duckdb.connect(
        str(db_path), read_only=True, config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    try:
        root = con.execute("SELECT root FROM cowork_data_root").fetchone()[0]
    except duckdb.CatalogException:  # a file built before the view existed
        root = normalize_root(data_root or db_path.parent)
    object_store(con, root)  # its queries see the files as they are when it opens (`session`)
    folders = {
        join(base, part) + "/"
        for base in {root, *([] if is_remote(root) else [os.path.realpath(root)])}
        for part in READABLE
    }
    con.execute("SET allowed_directories = ?", [sorted(folders)])
    con.execute("SET memory_limit = ?", [memory_limit])
    con.execute("SET enable_progress_bar = false")  # printed among the rows of a long query otherwise
    if spill:  # where a query past the memory limit spills: not beside the file, in the data root
        con.execute("SET temp_directory = ?", [spill])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def refuse_unless_select(sql: str) -> None:
    """Only one SELECT (or WITH ... SELECT) statement runs; anything else is refused by its type, from
    DuckDB's own parser."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryRefused(f"not valid SQL: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1:
        raise QueryRefused(f"one statement at a time, got {len(statements)}")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise QueryRefused(f"only SELECT queries run here (read-only); this is a {kind.name} statement")


class QueryLimit(Exception):
    """A query stopped at its time or memory limit."""


def run_query(
    db_path: Path,
    sql: str,
    params: dict[str, str] | None = None,
    data_root: str | None = None,
    timeout: float = SQL_TIMEOUT_SECONDS,
    memory_limit: str = SQL_MEMORY_LIMIT,
) -> tuple[list[str], list[tuple]]:
    """Run one SELECT on a confined connection (`confined`), stopped after `timeout` seconds or past
    `memory_limit` (QueryLimit); QueryRefused for anything else or for a file outside the data root."""
    columns, rows, _ = first_rows(db_path, sql, params, data_root, timeout, memory_limit, limit=None)
    return columns, rows


def first_rows(
    db_path: Path,
    sql: str,
    params: dict[str, str] | None = None,
    data_root: str | None = None,
    timeout: float = SQL_TIMEOUT_SECONDS,
    memory_limit: str = SQL_MEMORY_LIMIT,
    limit: int | None = 200,
) -> tuple[list[str], list[tuple], int]:
    """As `run_query`, but only the first `limit` rows come into Python: the rest are counted as Arrow batches
    stream past, so a SELECT of millions of rows stays within the memory limit. Returns (columns, rows, total)."""
    refuse_unless_select(sql)
    with session(db_path, data_root, memory_limit) as con:
        timer = threading.Timer(timeout, con.interrupt)
        timer.start()
        try:
            if limit is None:
                cur = con.execute(sql, params) if params else con.execute(sql)
                rows = cur.fetchall()
                return [d[0] for d in cur.description or []], rows, len(rows)
            # The result streams as Arrow batches: the first `limit` rows become tuples, the rest are only counted.
            relation = con.sql(sql, params=params or None)
            rows, total = [], 0
            for batch in relation.to_arrow_reader(8 * 1024):
                if len(rows) < limit:
                    rows += list(zip(*(c.to_pylist() for c in batch.slice(0, limit - len(rows)).columns)))
                total += batch.num_rows
            return relation.columns, rows, total
        except duckdb.PermissionException as exc:
            raise QueryRefused(f"outside what queries may read: {str(exc).splitlines()[0]}") from None
        except duckdb.InterruptException:
            raise QueryLimit(f"stopped at its time limit of {timeout:g} s (--timeout)") from None
        except duckdb.OutOfMemoryException:
            raise QueryLimit(f"stopped at its memory limit of {memory_limit} (--memory-limit)") from None
        finally:
            timer.cancel()


@contextmanager
def session(
    db_path: Path, data_root: str | None = None, memory_limit: str = SQL_MEMORY_LIMIT
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A confined connection (`confined`) for one or several queries, which see the files as they are when it
    opens (on an object store, each file listed and looked up once). It spills past its memory limit to the run's
    scratch folder (DuckDB's default spills beside the file, into the data root), which the next command sweeps if
    this process is killed (runtime/scratch.py)."""
    if not db_path.is_file():
        raise FileNotFoundError(f"no DuckDB file at {db_path}; run `cowork-curate run` first")
    spill = tempfile.mkdtemp(prefix="cowork-sql-", dir=scratch.folder())
    try:
        con = confined(db_path, data_root, memory_limit, spill)
        try:
            yield con
        finally:
            con.close()
    finally:
        shutil.rmtree(spill, ignore_errors=True)
