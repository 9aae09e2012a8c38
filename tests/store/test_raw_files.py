"""Streaming raw reading: records numbered like an editor's lines, gzip damage counted, never raised."""

import gzip

import pytest

from cowork_assets.ingest.formats import scan_batch
from cowork_assets.store.raw_files import batch_entries, discover_batches, iter_raw_lines


def _lines(path):
    return [(l.record, l.data, l.error) for l in iter_raw_lines(path)]


def test_plain_file_with_crlf_blank_lines_and_no_final_newline(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a":1}\r\n\n{"b":2}\n   \n{"c":3}')
    assert _lines(p) == [
        (1, b'{"a":1}\r', None),
        (2, b"", None),
        (3, b'{"b":2}', None),
        (4, b"   ", None),
        (5, b'{"c":3}', None),
    ]


def test_lines_spanning_read_blocks(tmp_path, monkeypatch):
    import cowork_assets.store.raw_files as rf

    monkeypatch.setattr(rf, "READ_BYTES", 5)
    p = tmp_path / "a.jsonl"
    p.write_bytes(b"x" * 23 + b"\n" + b"y" * 7 + b"\n")
    assert _lines(p) == [(1, b"x" * 23, None), (2, b"y" * 7, None)]


def test_multi_member_gzip_reads_every_member(tmp_path):
    p = tmp_path / "a.jsonl.gz"
    p.write_bytes(gzip.compress(b"one\ntwo\n") + gzip.compress(b"three\n") + gzip.compress(b""))
    assert [l[1] for l in _lines(p)] == [b"one", b"two", b"three"]


def test_truncated_last_member_is_one_record_with_a_reason(tmp_path):
    tail = gzip.compress(b'{"id": "cut", "pad": "' + b"z" * 500 + b'"}\n')
    p = tmp_path / "a.jsonl.gz"
    p.write_bytes(gzip.compress(b"one\ntwo\n") + tail[: len(tail) // 2])
    got = _lines(p)
    assert [(r, e) for r, _, e in got] == [(1, None), (2, None), (3, "truncated_gzip")]


def test_corrupt_gzip_stops_with_a_reason(tmp_path):
    good = gzip.compress(b"one\n")
    p = tmp_path / "a.jsonl.gz"
    p.write_bytes(good + b"\x1f\x8bNOT-DEFLATE-DATA-AT-ALL")
    got = _lines(p)
    assert got[0] == (1, b"one", None)
    assert got[1][0] == 2 and got[1][2].startswith("corrupt_gzip")


def test_discovery_skips_files_hidden_folders_and_lists_ignored_files(tmp_path):
    for name in ("b2", "b1", ".hidden", "_labels"):
        (tmp_path / name).mkdir()
    (tmp_path / "labels.jsonl").write_text("{}\n")
    assert discover_batches(tmp_path) == ["b1", "b2"]
    (tmp_path / "b1" / "z.jsonl").write_text("")
    (tmp_path / "b1" / "a.jsonl.gz").write_bytes(gzip.compress(b""))
    (tmp_path / "b1" / "notes.txt").write_text("hi")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.jsonl"
    outside.write_text("{}\n")
    (tmp_path / "b1" / "link.jsonl").symlink_to(outside)
    files, skipped = batch_entries(tmp_path, "b1")
    assert [f.name for f in files] == ["a.jsonl.gz", "notes.txt", "z.jsonl"]
    assert skipped == [("b1/link.jsonl", "resolves outside the raw root")]
    sources = scan_batch(tmp_path, "b1")  # the formats decide what is raw data
    assert [s.rel for s in sources.files] == ["b1/a.jsonl.gz", "b1/z.jsonl"]
    assert sources.skipped[1:] == [
        ("b1/notes.txt", "not JSON Lines (*.jsonl, *.jsonl.gz) or a JSON document any format reads")
    ]


def test_a_batch_is_read_as_its_tool_laid_it_out_with_bounded_depth_and_no_links_followed(tmp_path):
    deep = tmp_path / "b" / "logs" / "run_evaluation" / "run" / "model" / "django__django-1"
    deep.mkdir(parents=True)
    (deep / "report.json").write_text("{}")
    (tmp_path / "b" / "output" / "x").mkdir(parents=True)
    (tmp_path / "b" / "output" / "x" / "x.traj.json").write_text("{}")
    (tmp_path / "b" / ".git").mkdir()
    (tmp_path / "b" / ".git" / "HEAD").write_text("ref")
    (tmp_path / "b" / "again").symlink_to(tmp_path / "b" / "output")
    too_deep = tmp_path / "b" / "1" / "2" / "3" / "4" / "5" / "6" / "7" / "8" / "9"
    too_deep.mkdir(parents=True)
    (too_deep / "lost.jsonl").write_text("{}")
    files, skipped = batch_entries(tmp_path, "b")
    assert [f.relative_to(tmp_path).as_posix() for f in files] == [
        "b/logs/run_evaluation/run/model/django__django-1/report.json",
        "b/output/x/x.traj.json",
    ]
    assert skipped == [
        ("b/.git", "a hidden folder: not read"),
        ("b/1/2/3/4/5/6/7/8/9", "a folder more than 8 levels inside the batch folder"),
        ("b/again", "a link to a folder: not followed"),
    ]


def test_gzip_members_read_back_whole_whatever_the_output_bound(tmp_path, monkeypatch):
    """The inflater stops at READ_BYTES of output a call (a bomb's bound): every member, and output that ends
    exactly on the bound, still comes back whole, for ingest and for the recount."""
    import gzip

    from cowork_assets.ingest import recount
    from cowork_assets.store import raw_files

    data = b"".join(b'{"i": %d, "pad": "%s"}\n' % (i, b"x" * (i * 37 % 3000)) for i in range(2000))
    path = tmp_path / "a.jsonl.gz"
    path.write_bytes(b"".join(gzip.compress(data[k : k + 500_000]) for k in range(0, len(data), 500_000)))
    exact = tmp_path / "b.jsonl.gz"
    exact.write_bytes(gzip.compress(b"a" * (4 << 20) + b"\n{}\n"))  # output a multiple of the bound
    for bound in (1 << 20, 4096, 1000):
        monkeypatch.setattr(raw_files, "READ_BYTES", bound)
        monkeypatch.setattr(recount, "BLOCK", bound)
        lines = list(raw_files.iter_raw_lines(path))
        assert b"\n".join(line.data for line in lines) + b"\n" == data and not any(line.error for line in lines)
        assert recount.count_lines(path) == 2000
        assert [(line.record, len(line.data), line.error) for line in raw_files.iter_raw_lines(exact, 1 << 30)] == [
            (1, 4 << 20, None),
            (2, 2, None),
        ]
        assert recount.count_lines(exact) == 2


@pytest.mark.parametrize("gz", [False, True])
def test_a_raw_line_is_read_whole_across_blocks_and_bounded(tmp_path, monkeypatch, gz):
    """What `trace` shows of a sample's raw line: the numbered line of the decompressed file, however the reads
    split it, cut at the limit; None past the last line."""
    from cowork_assets.store import raw_files

    monkeypatch.setattr(raw_files, "READ_BYTES", 7)  # every line crosses a block
    data = b'{"a": 1}\n\n' + "é".encode() * 40 + b"\nlast"
    path = tmp_path / ("f.jsonl.gz" if gz else "f.jsonl")
    path.write_bytes(gzip.compress(data) if gz else data)
    lines = [raw_files.raw_line(path, n, limit=30) for n in range(1, 6)]
    assert lines == ['{"a": 1}', "", "é" * 30, "last", None]
