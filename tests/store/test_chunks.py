"""A per-trajectory table read a chunk of whole trajectories at a time (`storage.trajectory_chunks`)."""

import polars as pl
import pytest

from cowork_assets.store.storage import trajectory_chunks


def _table(tmp_path, sizes: list[int]) -> tuple[str, pl.DataFrame]:
    """A table of trajectories t00, t01, ... with `sizes` rows each, in trajectory order."""
    frame = pl.DataFrame(
        {
            "trajectory_id": [f"t{i:02}" for i, n in enumerate(sizes) for _ in range(n)],
            "message_index": [j for n in sizes for j in range(n)],
        }
    )
    path = tmp_path / "messages.parquet"
    frame.write_parquet(path, row_group_size=3)
    return str(path), frame


@pytest.mark.parametrize("sizes", [[4, 1, 7, 2, 2, 9, 1, 3], [12], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]])
def test_chunks_hold_whole_trajectories_and_every_row_once(tmp_path, sizes):
    path, frame = _table(tmp_path, sizes)
    chunks = list(trajectory_chunks(path, rows=5))
    assert pl.concat(chunks).equals(frame)
    ids = [set(c["trajectory_id"]) for c in chunks]
    assert all(not (a & b) for i, a in enumerate(ids) for b in ids[i + 1 :])  # no trajectory in two chunks
    assert all(c.height for c in chunks)


def test_a_table_smaller_than_a_chunk_is_one_chunk(tmp_path):
    path, frame = _table(tmp_path, [3, 5, 2, 4])
    chunks = list(trajectory_chunks(path))
    assert len(chunks) == 1 and chunks[0].equals(frame)
    assert list(trajectory_chunks(_table(tmp_path, [])[0])) == []
