"""What `cowork-curate run` prints at the end: rows per table, quarantine, where things are."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

import duckdb

from cowork_assets.datasets.schemas import PUBLISHED
from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.warehouse.duckdb_file import named_query, session
from cowork_cli.runner import RunOutcome

REPO = Path(__file__).resolve().parents[1]  # where `make ui` runs, and its defaults are
SHOWN = re.compile(r"\d+ of \d+ shown")  # a Markdown table's count of the rows it shows (`markdown.table`)
ROWS_PER_TABLE = (
    "SELECT table_name, sum(n_rows)::BIGINT AS n_rows, count(*) AS batches FROM ("
    + named_query("rows_per_table").rstrip().rstrip(";")
    + ") GROUP BY table_name ORDER BY table_name"
)
QUARANTINE = "SELECT reason, count(*) AS n_records FROM quarantine GROUP BY reason ORDER BY 2 DESC, 1"
SELECTED = (
    "SELECT count(*) FILTER (WHERE teacher_role = 'teacher'), "
    "count(*) FILTER (WHERE teacher_role = 'teacher' AND (batch, trajectory_id) NOT IN "
    "(SELECT (batch, trajectory_id) FROM exclusions WHERE dataset = 'sft')) "
    "FROM trajectories"
)


def format_rows(columns: Sequence[str], rows: Sequence[Sequence], limit: int = 200, total: int | None = None) -> str:
    """The first `limit` rows as a table; `total`: the rows of the whole result, when only the first were read."""
    total = len(rows) if total is None else total
    cells = [[str(c) for c in columns]] + [["NULL" if v is None else str(v) for v in r] for r in rows[:limit]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if total > limit:
        lines.append(f"... {total - limit} more rows")
    return "\n".join(lines) + f"\n({total} rows)"


def _query(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[str], list[tuple]] | None:
    """A query's columns and rows, or None when a table it reads does not exist yet (no batch processed, nothing
    published)."""
    try:
        cursor = con.execute(sql)
        return [d[0] for d in cursor.description], cursor.fetchall()
    except duckdb.CatalogException:
        return None


def print_summary(settings: CurateSettings, outcome: RunOutcome, home: Path | None = None) -> None:
    db = settings.warehouse_path
    print(f"\n{len(outcome.batches)} batch(es) in {outcome.seconds:.1f}s")
    if outcome.waiting:
        print(f"waiting (not read yet, see above): {', '.join(outcome.waiting)}")
    if db.is_file():
        with session(db) as con:  # one connection for every count: the files listed once
            _print_counts(con)
    for ghost in outcome.ghosts:
        print(
            f"\nbatch {ghost}: processed, but its folder is no longer under the raw root (renamed or removed); its "
            f"runs are still in the datasets: `cowork-curate drop {ghost} --data-root {settings.root}` takes it out"
        )
    for where, error in outcome.failed.items():
        print(f"\nFAILED {where}: {error}")
    for name in outcome.failed_checks:
        details = outcome.check_details.get(name, "").splitlines()
        warning = name.endswith("(WARN)")
        if warning:  # headline numbers only; the examples (and how many there are) are in the UI and the tables
            details = [
                line for line in details if line.strip() and not line.startswith("|") and not SHOWN.fullmatch(line)
            ]
            details = details[:4]
        print(f"\n{'WARNING' if warning else 'FAILED'} CHECK {name}")
        print("  " + "\n  ".join(details))
    print(f"\noutputs: Parquet tables in {settings.root}/tables/<table>/batch=<batch>/")
    cli = Path(sys.executable).parent / "cowork-curate"
    cli = cli if cli.exists() else "cowork-curate"
    print(f"         DuckDB views in {db}")
    print(f"query:   {cli} sql --data-root {settings.root} --query why_excluded   (--list for all)")
    print(f"UI:      {ui_command(settings, home)}  (then open http://127.0.0.1:3000)")


def _print_counts(con: duckdb.DuckDBPyConnection) -> None:
    """Rows per table, the quarantine and skipped inputs, the selection and the published datasets' rows."""
    if counts := _query(con, ROWS_PER_TABLE):
        print("\nrows per table:\n" + format_rows(*counts))
    if found := _query(con, QUARANTINE):
        columns, rows = found
        total = sum(r[1] for r in rows)
        print(f"\nquarantined raw records: {total}" + (("\n" + format_rows(columns, rows)) if rows else ""))
    if found := _query(con, "SELECT raw_file, reason FROM skipped_inputs ORDER BY raw_file"):
        columns, rows = found
        print(
            f"\nskipped inputs (no format reads them): {len(rows)}"
            + (("\n" + format_rows(columns, rows)) if rows else "")
        )
    if found := _query(con, SELECTED):
        _, [(teachers, selected)] = found
        print(f"\nselected for SFT: {selected} of {teachers} teacher runs (why not: --query exclusions_by_criterion)")
    for dataset in PUBLISHED:
        if published := _query(con, f"SELECT count(*) FROM {dataset}"):
            print(f"published {dataset} (current version): {published[1][0][0]} rows")


def ui_command(settings: CurateSettings, home: Path | None) -> str:
    """`make ui` on the instance and roots this run used (the Makefile's defaults need no arguments)."""
    given = {
        "DAGSTER_HOME": home.resolve() if home else None,
        "RAW_ROOT": settings.raw_path,
        "DATA_ROOT": settings.root,
    }
    defaults = {
        "DAGSTER_HOME": REPO / ".dagster_home",
        "RAW_ROOT": REPO / "data" / "raw",
        "DATA_ROOT": REPO / "data" / "curated",
    }
    extra = [f"{k}={v}" for k, v in given.items() if v is not None and str(v) != str(defaults[k])]
    return " ".join(["make ui", *extra])
