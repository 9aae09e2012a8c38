"""A batch's commit (its tables moved into place, then its manifest) is seen whole by what reads the batches' states:
a run publishing while another process's batch finishes must not take that batch for damaged."""

import threading
from pathlib import Path

import pytest

from cowork_assets.store import batch_state, storage
from cowork_assets.store.registry import TABLES


@pytest.mark.parametrize(
    "read",
    [
        lambda root, raw: [(s.batch, s.problem) for s in batch_state.processed_states(root, raw, "settings")],
        lambda root, raw: batch_state.corpus_version(root),
    ],
    ids=["processed_states", "corpus_version"],
)
def test_what_reads_the_batches_states_waits_for_a_commit_under_way(tmp_path, monkeypatch, read):
    root, raw = str(tmp_path / "data"), tmp_path / "raw"
    (raw / "b").mkdir(parents=True)
    (raw / "b" / "runs.jsonl").write_text("{}\n")
    batch_state.start(root, "b", batch_state.raw_fingerprint(raw, "b"), "settings", "run-1")
    for table in ("trajectories", "messages"):
        Path(TABLES[table].file(root, "b")).parent.mkdir(parents=True)
        Path(TABLES[table].file(root, "b")).write_bytes(table.encode())
    seen, readers, waited = [], [], []
    real_move = storage.move_file

    def move_then_read(source: str, target: str) -> None:
        real_move(source, target)
        if not readers:  # the first table is in place, the manifest not written: a reader in another thread
            readers.append(threading.Thread(target=lambda: seen.append(read(root, raw))))
            readers[0].start()
            readers[0].join(timeout=1.0)
            waited.append(readers[0].is_alive())  # still waiting for the commit to end

    monkeypatch.setattr(storage, "move_file", move_then_read)
    batch_state.finish(root, "b", "run-1")
    readers[0].join(timeout=30)
    monkeypatch.setattr(storage, "move_file", real_move)
    assert waited == [True]
    assert seen == [read(root, raw)]  # what it read is the batch after its commit
    if isinstance(seen[0], list):
        assert seen[0] == [("b", None)]
