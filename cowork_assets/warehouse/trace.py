"""The chain of a sample, from its raw line to its outcome (sql/queries/trace.sql), as lines a person reads:
what `cowork-curate trace` prints and the `trace_sample` job logs in the UI."""

from __future__ import annotations

from pathlib import Path

from cowork_assets.store.raw_databases import MAGIC, is_database
from cowork_assets.store.raw_files import raw_line
from cowork_assets.warehouse.duckdb_file import named_query, run_query

LINE_CHARS = 300  # of the raw line shown: enough to recognise it, bounded however long the record is
RAW_LINES = "SELECT trajectory_id, raw_file, raw_record FROM trajectories WHERE trajectory_id LIKE $trajectory_id"


PAIR = "SELECT chosen_trajectory_id, rejected_trajectory_id FROM preference_pairs WHERE pair_id = $pair_id"


def trace(db_path: Path, data_root: str, sample_id: str, raw_root: Path | None = None) -> list[str]:
    """Each traced trajectory's id, then one indented line per step, the raw line itself (its first LINE_CHARS
    characters, read from `raw_root`) after its file and line; LookupError when nothing matches. A preference
    pair's id traces both its runs, the chosen first."""
    if not sample_id.strip():
        raise LookupError("no sample id given: name a sample or trajectory id (a published dataset's sample_id)")
    if ">" in sample_id and (pair := _pair(db_path, data_root, sample_id)):
        chosen, rejected = (trace(db_path, data_root, side, raw_root) for side in pair)
        return [f"preference pair {sample_id}", "", "chosen:", *chosen, "", "rejected:", *rejected]
    _, rows = run_query(db_path, named_query("trace"), {"trajectory_id": sample_id}, data_root)
    if not rows:
        raise LookupError(
            f"no trajectory or sample {sample_id!r} (ids are case-sensitive; quarantined records have no "
            "id: see the quarantine_reasons query)"
        )
    located = {}
    if raw_root is not None:
        _, found = run_query(db_path, RAW_LINES, {"trajectory_id": sample_id}, data_root)
        located = {tid: (raw_file, raw_record) for tid, raw_file, raw_record in found}
    lines, current = [], None
    for trajectory_id, _, stage, detail in rows:
        if trajectory_id != current:
            lines += [""] * bool(current) + [trajectory_id]
            current = trajectory_id
        lines.append(f"  {stage:<10} {detail}")
        if stage == "raw" and raw_root is not None:
            lines.append(f"  {'line':<10} {_line(raw_root, *located[trajectory_id])}")
    return lines


def _line(raw_root: Path, raw_file: str, raw_record: int) -> str:
    path = raw_root / raw_file
    try:
        with open(path, "rb") as fh:
            if is_database(fh.read(len(MAGIC))):  # a session store: its records are sessions, not lines
                return f"(session {raw_record} of the SQLite database {path}, in the order its sessions were made)"
        text = raw_line(path, raw_record, LINE_CHARS)
    except OSError as exc:
        return f"(cannot read {path}: {exc.strerror})"
    if text is None:
        return f"({path} has no line {raw_record} now: the file changed since it was read)"
    return text + (" ..." if len(text) == LINE_CHARS else "")


def _pair(db_path: Path, data_root: str, pair_id: str) -> tuple[str, str] | None:
    import duckdb

    try:
        _, rows = run_query(db_path, PAIR, {"pair_id": pair_id}, data_root)
    except duckdb.CatalogException:  # no preference pairs published yet
        return None
    return rows[0] if rows else None
