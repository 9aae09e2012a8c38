"""The independent recount of raw records (ingest/recount.py), on bytes made by hand."""

import gzip
import json
import zlib

from cowork_assets.ingest.recount import count_documents, count_lines, recount


def test_lines_with_a_non_blank_byte_are_records_whatever_the_line_endings(tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_bytes(b'{"a": 1}\r\n\r\n   \n{"b": 2}\n\xef\xbb\xbf{"c"\n{"d": 4}')  # no newline at the end
    assert count_lines(f) == 4


def test_gzip_members_are_read_in_turn_and_damage_is_one_more_record(tmp_path):
    whole = tmp_path / "a.jsonl.gz"
    whole.write_bytes(gzip.compress(b"1\n2\n") + gzip.compress(b"3\n\n4\n"))
    assert count_lines(whole) == 4
    lines = b"".join(b"%d\n" % (i * 7919 % 100003) for i in range(5000))
    cut = tmp_path / "b.jsonl.gz"
    cut.write_bytes(gzip.compress(lines)[:-30])  # ends early: the unfinished line and the damage are one record
    decoded = zlib.decompressobj(wbits=31).decompress(cut.read_bytes())
    assert 4000 < decoded.count(b"\n") < 5000 and count_lines(cut) == decoded.count(b"\n") + 1
    corrupt = tmp_path / "c.jsonl.gz"
    corrupt.write_bytes(b"not gzip at all\n")
    assert count_lines(corrupt) == 1


def test_json_documents_count_their_runs(tmp_path):
    cases = {
        "tau.json": [{"task_id": i, "traj": []} for i in range(3)],  # tau-bench: one per run
        "tau2.json": {"info": {}, "tasks": [], "simulations": [{}, {}]},  # tau2-bench: one per simulation
        "chat.traj.json": [{"role": "system"}, {"role": "user"}],  # mini-swe-agent: one conversation
        "tools_retail.json": [{"type": "function", "function": {"name": "x"}}],  # tool definitions: none
        "report.json": {"resolved_ids": ["a"]},  # a SWE-bench report: none
        "run.traj": {"trajectory": [], "history": []},  # one run per file
    }
    for name, document in cases.items():
        (tmp_path / name).write_text(json.dumps(document))
    (tmp_path / "broken.json").write_text('{"simulations": [')
    assert {p.name: count_documents(p) for p in tmp_path.iterdir()} == {
        "tau.json": 3,
        "tau2.json": 2,
        "chat.traj.json": 1,
        "tools_retail.json": 0,
        "report.json": 0,
        "run.traj": 1,
        "broken.json": 1,
    }
    assert recount(tmp_path, skipped=["tau.json"]) == 5


def test_a_forced_line_format_counts_lines_in_any_file(tmp_path):
    (tmp_path / ".cowork-format").write_text("cowork\n")
    (tmp_path / "runs.txt").write_text('{"a": 1}\n{"a": 2}\n')
    assert recount(tmp_path) == 2
