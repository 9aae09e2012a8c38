"""The independent recount of raw records (ingest/recount.py), on bytes made by hand."""

import gzip
import json
import zipfile
import zlib

from cowork_assets.ingest import recount
from cowork_assets.ingest.recount import count_lines


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


def test_each_rule_counts_a_documents_records(tmp_path):
    cases = {
        "tau.json": ([{"task_id": i, "traj": []} for i in range(3)], recount.ELEMENTS),  # tau-bench: one per run
        "tau2.json": ({"info": {}, "tasks": [], "simulations": [{}, {}]}, recount.items("simulations")),
        "lb.json": ([{}, {}, {}, {}], recount.items("simulations")),  # a bare list of simulations
        "log.json": ({"eval": {}, "samples": None}, recount.items("samples")),  # no samples list: none
        "chat.traj.json": ([{"role": "system"}, {"role": "user"}], recount.ONE),  # mini-swe-agent: one conversation
        "report.json": ({"resolved_ids": ["a"]}, recount.NONE),  # a SWE-bench report: none
    }
    for name, (document, _) in cases.items():
        (tmp_path / name).write_text(json.dumps(document))
    (tmp_path / "broken.json").write_text('{"simulations": [')
    counted = {name: recount.count(tmp_path / name, rule) for name, (_, rule) in cases.items()}
    assert counted == dict(zip(cases, [3, 2, 4, 0, 1, 0]))
    assert recount.count(tmp_path / "broken.json", recount.items("simulations")) == 1
    assert recount.count(tmp_path / "tau2.json", recount.items("simulations"), max_bytes=10) == 1  # never read


def test_a_zip_archive_counts_its_members_under_the_key(tmp_path):
    with zipfile.ZipFile(tmp_path / "log.eval", "w") as archive:
        archive.writestr("header.json", "{}")
        for name in ("samples/1_epoch_1.json", "samples/2_epoch_1.json", "samples/notes.txt"):
            archive.writestr(name, "{}")
    assert recount.count(tmp_path / "log.eval", recount.items("samples")) == 2
    (tmp_path / "bad.eval").write_bytes(b"PK\x03\x04 not a zip")
    assert recount.count(tmp_path / "bad.eval", recount.items("samples")) == 1


def test_a_format_may_count_lines_files_and_documents_apart():
    declared = {"lines": recount.LINES, "document": recount.ONE}  # OpenHands: output.jsonl, or a bare event list
    assert recount.rule_for(declared, "lines") == recount.LINES
    assert recount.rule_for(declared, "document") == recount.ONE
    assert recount.rule_for(recount.ONE, "lines") == recount.ONE


def test_a_database_counts_the_rows_of_its_table_and_one_that_does_not_open_is_one_record(tmp_path):
    import sqlite3

    db = tmp_path / "sessions.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE sessions (id TEXT)")
        connection.executemany("INSERT INTO sessions VALUES (?)", [("a",), ("b",), ("c",)])
    connection.close()
    assert recount.count(db, recount.rows("sessions")) == 3
    assert recount.count(db, recount.rows("messages")) == 1  # no such table: the file is one record
    (tmp_path / "broken.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 80)
    assert recount.count(tmp_path / "broken.db", recount.rows("sessions")) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.db", "sessions.db"]  # nothing written beside them


def test_the_recount_follows_each_files_format_and_a_forced_one(tmp_path):
    """Which files are read and by what rule come from detection and each format's RECORDS: a Claude Code session
    is one record however many lines, a forced line format counts lines in any file."""
    from cowork_assets.ingest.formats import record_rules, scan_batch

    batch = tmp_path / "b"
    (batch / "sub").mkdir(parents=True)
    session = [{"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "message": {"role": "user"}}]
    (batch / "sub" / "s.jsonl").write_text("\n".join(json.dumps(e) for e in session * 3) + "\n")
    (batch / "notes.txt").write_text("not records\n")
    assert recount.recount(record_rules(scan_batch(tmp_path, "b"))) == 1
    (batch / ".cowork-format").write_text("cowork\n")
    (batch / "runs.txt").write_text('{"a": 1}\n{"a": 2}\n')
    assert recount.recount(record_rules(scan_batch(tmp_path, "b"))) == 3 + 1 + 2
