"""ShareGPT in the three shapes its files come in (a JSON list, JSON Lines, a list under `data`), from the real
LLaMA-Factory records of the corpus: the reader and the independent recount agree on each, and what is not a
ShareGPT record is quarantined with its reason, never lost."""

from __future__ import annotations

import json

import polars as pl

from cowork_assets.ingest.batch import ingest_batch
from cowork_assets.ingest.formats import recount_batch
from cowork_assets.store.registry import TABLES
from tests.conformance.summarize import HERE

GLAIVE = json.loads((HERE / "sharegpt/llamafactory-glaive/glaive_toolcall_en_demo.json").read_text())


def _write_shapes(batch, records: list) -> None:
    batch.mkdir(parents=True)
    (batch / "listed.json").write_text(json.dumps(records))
    (batch / "lines.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (batch / "wrapped.json").write_text(json.dumps({"data": records}))


def test_a_list_json_lines_and_a_data_wrapper_read_alike_and_the_recount_agrees(tmp_path):
    _write_shapes(tmp_path / "raw" / "b1", GLAIVE)
    report = ingest_batch(tmp_path / "raw", "b1", str(tmp_path / "out"))
    assert dict(report.formats) == {"sharegpt": 3}
    assert report.raw_records == recount_batch(tmp_path / "raw", "b1") == report.parsed == 30
    assert report.quarantined == 0
    runs = TABLES["trajectories"].read(str(tmp_path / "out"), "b1")
    calls = (
        TABLES["tool_calls"]
        .read(str(tmp_path / "out"), "b1")
        .join(runs.select("trajectory_id", "raw_file"), on="trajectory_id")
    )
    per_file = runs.group_by("raw_file").agg(pl.len(), pl.col("task_hash").sort()).sort("raw_file")
    assert per_file["len"].to_list() == [10, 10, 10]
    assert (
        per_file["task_hash"][0].to_list() == per_file["task_hash"][1].to_list() == per_file["task_hash"][2].to_list()
    )
    assert calls.group_by("raw_file").len()["len"].to_list() == [6, 6, 6]  # as the corpus summary counts
    assert calls.filter(pl.col("observation_index").is_null()).height == 0
    assert set(calls["tool_name"]) <= {t["name"] for r in GLAIVE for t in json.loads(r["tools"])}


def test_what_is_not_a_sharegpt_record_is_quarantined_with_its_reason(tmp_path):
    good = GLAIVE[0]
    records = [
        good,
        {"messages": []},  # another format's record
        {"conversations": [{"from": "human", "value": "hi"}, {"from": "narrator", "value": "?"}]},
        {"conversations": [{"from": "human", "value": "hi"}, {"from": "observation", "value": "{}"}]},
        {"conversations": [{"from": "human", "value": "hi"}, {"from": "function_call", "value": "not json"}]},
    ]
    _write_shapes(tmp_path / "raw" / "b1", records)
    report = ingest_batch(tmp_path / "raw", "b1", str(tmp_path / "out"))
    assert report.raw_records == recount_batch(tmp_path / "raw", "b1") == 15
    assert (report.parsed, report.quarantined) == (3, 12)
    quarantine = TABLES["quarantine"].read(str(tmp_path / "out"), "b1")
    assert set(quarantine["reason"]) == {"bad_sharegpt_record"}
    for raw_file in ("b1/listed.json", "b1/lines.jsonl", "b1/wrapped.json"):
        mine = quarantine.filter(pl.col("raw_file") == raw_file)
        assert dict(mine.select("raw_record", "detail").rows()) == {
            2: "expected an object with a conversations list",
            3: "turn 1 is tagged 'narrator', not a ShareGPT tag",
            4: "turn 1 (observation) answers no function_call turn",
            5: "turn 1 (function_call) is not JSON",
        }, raw_file


def test_calls_made_at_once_are_each_answered_by_their_own_result(tmp_path):
    calls = [{"name": "weather", "arguments": {"city": c}} for c in ("Paris", "Oslo")]
    record = {
        "id": "parallel-1",
        "system": "You are a forecaster.",
        "conversations": [
            {"from": "human", "value": "Weather in Paris and Oslo?"},
            {"from": "function_call", "value": json.dumps(calls)},
            {"from": "observation", "value": json.dumps([{"temp": 21}, {"temp": 9}])},
            {"from": "gpt", "value": "Paris 21, Oslo 9."},
        ],
    }
    (tmp_path / "raw" / "b1").mkdir(parents=True)
    (tmp_path / "raw" / "b1" / "runs.jsonl").write_text(json.dumps(record) + "\n")
    ingest_batch(tmp_path / "raw", "b1", str(tmp_path / "out"))
    messages = TABLES["messages"].read(str(tmp_path / "out"), "b1").sort("message_index")
    assert messages["role"].to_list() == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert messages["content"].to_list()[3:5] == ['{"temp":21}', '{"temp":9}']
    tool_calls = TABLES["tool_calls"].read(str(tmp_path / "out"), "b1").sort("call_index")
    assert tool_calls["arguments"].to_list() == ['{"city":"Paris"}', '{"city":"Oslo"}']
    assert tool_calls["observation_index"].to_list() == [3, 4]
    assert TABLES["trajectories"].read(str(tmp_path / "out"), "b1")["trajectory_id"].to_list() == ["parallel-1"]
