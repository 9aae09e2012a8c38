"""The synthetic generator: deterministic, realistic, and honest in its labels."""

import hashlib
import json
from collections import Counter
from pathlib import Path

import orjson
import pytest

from cowork_assets.store.raw_files import iter_raw_lines
from cowork_assets.synthetic.generate import Rates, generate
from tests.conftest import DEFAULT


def _digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _valid(raw: Path) -> list[dict]:
    out = []
    for path in sorted(raw.glob("*/*.jsonl*")):
        for line in iter_raw_lines(path):
            try:
                out.append(orjson.loads(line.data))
            except orjson.JSONDecodeError:
                pass
    return [
        t
        for t in out
        if isinstance(t.get("messages"), list)
        and isinstance(t.get("task"), dict)
        and isinstance(t.get("trajectory_id"), str)
        and isinstance(t.get("teacher"), dict)
    ]


def test_same_seed_same_bytes_and_other_seed_differs(tmp_path, default_raw):
    generate(tmp_path / "again", **DEFAULT)
    assert _digest(tmp_path / "again") == _digest(default_raw)
    generate(tmp_path / "other", **{**DEFAULT, "seed": 8})
    assert _digest(tmp_path / "other") != _digest(default_raw)


def test_refuses_to_write_into_a_non_empty_folder(tmp_path):
    (tmp_path / "x").write_text("keep me")
    with pytest.raises(FileExistsError):
        generate(tmp_path, 5, 1, 1)
    assert (tmp_path / "x").read_text() == "keep me"


def test_layout_and_manifest_totals(default_raw, manifest):
    batches = sorted(p.name for p in default_raw.iterdir() if p.is_dir())
    assert batches == sorted(manifest["batches"]) and len(batches) == 3
    for b in batches:
        assert sorted(p.name for p in (default_raw / b).iterdir()) == ["part-000.jsonl", "part-001.jsonl.gz"]
    assert sum(b["parsed"] for b in manifest["batches"].values()) == 300
    assert sum(manifest["roles"].values()) == 300


def test_malformed_labels_match_the_manifest(labels, manifest):
    by_label = Counter((l["batch"], l["reason"]) for l in labels if l["kind"] == "malformed")
    by_manifest = Counter({(b, r): n for b, v in manifest["batches"].items() for r, n in v["quarantined"].items()})
    assert by_label == by_manifest
    assert {r for _, r in by_label} == {"bad_json", "invalid_utf8", "missing_field", "wrong_type", "truncated_gzip"}


def test_default_data_covers_what_the_pipeline_must_handle(default_raw, labels):
    trajs = _valid(default_raw)
    assert len(trajs) == 300
    check_types = {c["type"] for t in trajs for c in t["task"]["checks"]}
    assert check_types == {"tool_called", "tool_not_called", "keywords_present", "distinct_items", "state_equals"}
    assert {t["task"]["category"] for t in trajs} == {"single_turn", "multi_turn"}
    assert any(sum(m["role"] == "user" for m in t["messages"]) >= 2 for t in trajs)  # follow-ups
    services = {tool["name"].split("_")[0] for t in trajs for tool in t["task"]["tools"]}
    assert {"contacts", "todos", "calendar", "mail", "expenses", "documents"} <= services
    teachers = [t for t in trajs if t["teacher"]["role"] == "teacher"]
    assert {t["grade"]["passed"] for t in teachers} == {True, False}
    groups = Counter(t["group_id"] for t in trajs if t["teacher"]["role"] == "student")
    assert groups and all(n >= 2 for n in groups.values())
    arg_kinds = {
        type(c["function"]["arguments"]) for t in trajs for m in t["messages"] for c in m.get("tool_calls") or []
    }
    assert arg_kinds == {str, dict}
    obs = [len(m["content"]) for t in trajs for m in t["messages"] if m["role"] == "tool"]
    assert sum(n > 2000 for n in obs) > len(obs) / 4  # often several thousand characters
    kinds = {l["kind"] for l in labels}
    assert kinds == {
        "malformed",
        "unexposed_endpoint",
        "count_mismatch",
        "duplicate_creations",
        "exact_duplicate",
        "near_duplicate",
        "over_budget",
    }


def test_needed_values_sit_where_the_labels_say(default_raw):
    needed = [json.loads(l) for l in (default_raw / "needed_values.jsonl").read_text().splitlines()]
    trajs = {t["trajectory_id"]: t for t in _valid(default_raw)}
    beyond = [n for n in needed if n["role"] == "tool" and n["offset"] > 1000]
    assert 0.2 < len(beyond) / len(needed) < 0.9  # a real share sits past the usual 1,000-char cut
    for n in needed[:200]:
        content = trajs[n["trajectory_id"]]["messages"][n["found_at"]]["content"]
        forms = {n["value"].casefold(), n["value"].replace(",", "").casefold()}
        assert any(content.casefold().find(f) == n["offset"] for f in forms)
        assert n["found_at"] < n["used_at"]


def test_injected_inconsistencies_are_real(default_raw, labels):
    trajs = {t["trajectory_id"]: t for t in _valid(default_raw)}
    for l in labels:
        t = trajs.get(l.get("trajectory_id"))
        if l["kind"] == "unexposed_endpoint":
            exposed = {tool["name"] for tool in t["task"]["tools"]}
            assert l["called"] not in exposed and l["exposed"] in exposed
            assert any(c["function"]["name"] == l["called"] for m in t["messages"] for c in m.get("tool_calls") or [])
        elif l["kind"] == "count_mismatch":
            check = next(c for c in t["task"]["checks"] if c["id"] == l["check_id"])
            assert check["expected"] == l["expected"] != l["requested"]
        elif l["kind"] == "duplicate_creations":
            assert t["grade"]["passed"] and l["calls"] == l["distinct"] + 1
        elif l["kind"] == "exact_duplicate":
            assert t["messages"] == trajs[l["duplicate_of"]]["messages"]
        elif l["kind"] == "near_duplicate":
            original = trajs[l["duplicate_of"]]["messages"]
            assert t["messages"][:-1] == original[:-1] and t["messages"][-1] != original[-1]
        elif l["kind"] == "over_budget":
            assert l["chars"] > 40_000


def test_rates_are_configurable(tmp_path):
    clean = Rates(**{name: 0.0 for name in Rates.names()})
    manifest = generate(tmp_path / "clean", 40, 2, 3, clean)
    assert all(not b["quarantined"] for b in manifest["batches"].values())
    assert (tmp_path / "clean" / "labels.jsonl").read_text() == ""
    assert manifest["roles"] == {"teacher": 40}


def test_batches_are_named_by_a_prefix_and_a_bad_one_is_refused(tmp_path):
    manifest = generate(tmp_path / "drop", trajectories=10, batches=2, seed=1, prefix="2026-12-03-teacher-")
    assert sorted(manifest["batches"]) == ["2026-12-03-teacher-a", "2026-12-03-teacher-b"]
    assert sorted(p.name for p in (tmp_path / "drop").iterdir() if p.is_dir()) == sorted(manifest["batches"])
    with pytest.raises(ValueError, match="makes batch names that cannot be batches"):
        generate(tmp_path / "bad", trajectories=10, batches=1, seed=1, prefix="drop[")
    assert not (tmp_path / "bad").exists()  # refused before anything is written
