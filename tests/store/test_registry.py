"""The registry's row counts across batches, as a batch run's metadata reports them (`rows_all_batches`)."""

import polars as pl

from cowork_assets.store.registry import TABLES

SCHEMA = {"batch": pl.String, "raw_file": pl.String, "reason": pl.String}


def _write(path, rows: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(
        {"batch": ["b"] * rows, "raw_file": ["f"] * rows, "reason": ["r"] * rows}, schema=SCHEMA
    ).write_parquet(path)


def test_the_rows_of_other_batches_are_their_committed_files_or_the_copy_a_run_is_writing(tmp_path):
    table = TABLES["skipped_inputs"]
    for batch, rows in {"a": 1, "b": 2, "c": 4, "d": 8}.items():
        _write(tmp_path / "tables" / "skipped_inputs" / f"batch={batch}" / "data.parquet", rows)
    _write(tmp_path / "in-progress" / "c" / "run-1" / "skipped_inputs" / "data.parquet", 16)  # c is being redone
    (tmp_path / "in-progress" / "e" / "run-2").mkdir(parents=True)  # e: started, nothing written yet
    assert table.rows_of_other_batches(str(tmp_path), "a") == 2 + 16 + 8
    assert table.rows_of_other_batches(str(tmp_path), "c") == 1 + 2 + 8
    # A file gone between the listing and the read (a batch dropped meanwhile) counts as none, the others still count.
    (tmp_path / "tables" / "skipped_inputs" / "batch=d" / "data.parquet").unlink()
    assert table.rows_of_other_batches(str(tmp_path), "a") == 2 + 16
