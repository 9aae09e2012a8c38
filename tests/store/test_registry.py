"""The registry's row counts across batches, as a batch run's metadata reports them (`rows_all_batches`)."""

import os

import polars as pl

from cowork_assets.store import storage
from cowork_assets.store.models import polars_schema
from cowork_assets.store.registry import TABLES

SCHEMA = {"batch": pl.String, "raw_file": pl.String, "reason": pl.String}


def _write(path, rows: int) -> None:
    """A file whose size grows with its rows (one raw file a row): the footer cache tells a replaced file by its size
    or time, and a rewrite within the filesystem's clock tick (a few ms on tmpfs) has the same time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(
        {"batch": ["b"] * rows, "raw_file": [f"f{i}" for i in range(rows)], "reason": ["r"] * rows}, schema=SCHEMA
    ).write_parquet(path)


def test_the_rows_of_other_batches_are_their_committed_files_or_the_copy_a_run_is_writing(tmp_path, monkeypatch):
    table = TABLES["skipped_inputs"]
    for batch, rows in {"a": 1, "b": 2, "c": 4, "d": 8}.items():
        _write(tmp_path / "tables" / "skipped_inputs" / f"batch={batch}" / "data.parquet", rows)
    _write(tmp_path / "in-progress" / "c" / "run-1" / "skipped_inputs" / "data.parquet", 16)  # c is being redone
    (tmp_path / "in-progress" / "e" / "run-2").mkdir(parents=True)  # e: started, nothing written yet
    listed = []
    list_names = storage.list_names
    monkeypatch.setattr(storage, "list_names", lambda *a, **k: listed.append(a[0]) or list_names(*a, **k))
    assert table.rows_of_other_batches(str(tmp_path), "a") == 2 + 16 + 8
    # The committed batches are one folder's names; the runs writing aside, batch by batch, come from one listing of
    # the aside folder, not one for it and another for each batch in it (each a request to an object store).
    assert listed == [table.folder(str(tmp_path))]
    assert table.rows_of_other_batches(str(tmp_path), "c") == 1 + 2 + 8
    # A file gone between the listing and the read (a batch dropped meanwhile) counts as none, the others still count.
    (tmp_path / "tables" / "skipped_inputs" / "batch=d" / "data.parquet").unlink()
    assert table.rows_of_other_batches(str(tmp_path), "a") == 2 + 16


def test_a_footer_is_read_once_while_its_file_is_unchanged_and_again_once_it_is_replaced(tmp_path, monkeypatch):
    table, folder = TABLES["skipped_inputs"], tmp_path / "tables" / "skipped_inputs"
    for batch, rows in {"a": 1, "b": 2, "c": 4}.items():
        _write(folder / f"batch={batch}" / "data.parquet", rows)
    read = []
    metadata = storage.pq.read_metadata
    monkeypatch.setattr(storage.pq, "read_metadata", lambda f: read.append(f) or metadata(f))
    assert table.rows_of_other_batches(str(tmp_path), "a") == 2 + 4
    assert len(read) == 2
    assert table.rows_of_other_batches(str(tmp_path), "c") == 1 + 2  # b's footer is known: a's alone is read
    assert table.rows_of_other_batches(str(tmp_path), "a") == 2 + 4
    assert len(read) == 3
    # A batch redone: its file replaced by one of other rows is read anew.
    replaced = folder / "batch=b" / "data.parquet"
    _write(replaced.with_suffix(".tmp"), 32)
    os.replace(replaced.with_suffix(".tmp"), replaced)
    assert table.rows_of_other_batches(str(tmp_path), "a") == 32 + 4
    assert len(read) == 4
    # A file that is not Parquet counts as none; so does one gone after it was stamped.
    (folder / "batch=c" / "data.parquet").write_bytes(b"not parquet")
    assert table.rows_of_other_batches(str(tmp_path), "a") == 32
    stamp = storage.stamps([str(replaced)])[str(replaced)]
    replaced.unlink()
    assert storage.stamps([str(replaced)]) == {}
    assert storage.footer_rows(str(replaced), (stamp[0] + 1, stamp[1])) is None


def test_a_buckets_note_and_rows_come_from_one_read_of_its_file(tmp_path, monkeypatch):
    """A task bucket computed across batches is read with the state of the corpus its footer notes from one read of
    the file: the rows are the ones the note describes even while a refresh replaces the file, and an object store
    is asked once, not once for the footer and again for the rows."""
    table, root = TABLES["exclusions"], str(tmp_path)
    schema = polars_schema(table.model)

    def rows(n: int) -> pl.DataFrame:
        return pl.DataFrame(
            [("sft_dataset", "b", f"t{i}", "task", "failed", "r", None) for i in range(n)], schema, orient="row"
        )

    table.write(rows(1), root, "0", corpus="now")
    table.write(rows(2), root, "1", corpus="now")
    table.write(rows(4), root, "2", corpus="before")  # computed from an earlier state of the corpus; "3": never
    opened = []
    read_bytes = storage.read_bytes
    monkeypatch.setattr(storage, "read_bytes", lambda location: opened.append(location) or read_bytes(location))
    found, stale = table.read_noted(root, "now", ["0", "1", "2", "3"])
    assert found.height == 3 and found.schema == schema and stale == ["2", "3"]
    assert opened == [table.committed_file(root, part) for part in "0123"]
    assert table.read_current(root, "now", ["0", "1"]).height == 3
