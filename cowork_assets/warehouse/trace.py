"""The chain of a sample, from its raw line to its outcome (sql/queries/trace.sql), as lines a person reads:
what `cowork-curate trace` prints and the `trace_sample` job logs in the UI."""

from __future__ import annotations

from pathlib import Path

from cowork_assets.warehouse.duckdb_file import named_query, run_query


def trace(db_path: Path, data_root: str, sample_id: str) -> list[str]:
    """Each traced trajectory's id, then one indented line per step; LookupError when nothing matches."""
    _, rows = run_query(db_path, named_query("trace"), {"trajectory_id": sample_id}, data_root)
    if not rows:
        raise LookupError(
            f"no trajectory or sample {sample_id!r} (ids are case-sensitive; quarantined records have no "
            "id: see the quarantine_reasons query)"
        )
    lines, current = [], None
    for trajectory_id, _, stage, detail in rows:
        if trajectory_id != current:
            lines += [""] * bool(current) + [trajectory_id]
            current = trajectory_id
        lines.append(f"  {stage:<10} {detail}")
    return lines
