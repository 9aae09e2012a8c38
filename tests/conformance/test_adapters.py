"""OpenAI chat JSONL and Harbor ATIF input, on hand-made files and malformed variants."""

import orjson
import polars as pl
import pytest

from cowork_assets.ingest.batch import ingest_batch
from cowork_assets.store.registry import TABLES

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "find",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]


def chat(i: int, **extra) -> bytes:
    return orjson.dumps(
        {
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": f"Find order ord_{i:05d}"}]},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "lookup", "arguments": f'{{"q": "ord_{i:05d}"}}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": f'{{"id": "ord_{i:05d}", "status": "shipped"}}'},
                {"role": "assistant", "content": f"ord_{i:05d} has shipped."},
            ],
            "tools": TOOLS,
            **extra,
        }
    )


ATIF = {
    "schema_version": "ATIF-v1.4",
    "session_id": "sess-1",
    "agent": {"name": "terminus", "model_name": "gpt-x", "tool_definitions": TOOLS},
    "steps": [
        {"step_id": 1, "source": "system", "message": "be brief"},
        {"step_id": 2, "source": "user", "message": "Find order ord_77777"},
        {
            "step_id": 3,
            "source": "agent",
            "message": "Looking.",
            "tool_calls": [{"tool_call_id": "t1", "function_name": "lookup", "arguments": {"q": "ord_77777"}}],
            "observation": {"results": [{"source_call_id": "t1", "content": '{"id": "ord_77777"}'}]},
        },
        {"step_id": 4, "source": "agent", "message": "ord_77777 is found."},
    ],
}


def _ingest(tmp_path, files: dict[str, bytes]):
    batch = tmp_path / "raw" / "b"
    batch.mkdir(parents=True)
    for name, data in files.items():
        (batch / name).write_bytes(data)
    report = ingest_batch(tmp_path / "raw", "b", tmp_path / "out")
    read = lambda t: TABLES[t].read(tmp_path / "out", "b")  # noqa: E731
    return report, read


def test_openai_chat_jsonl_is_detected_and_converted(tmp_path):
    lines = [chat(1, id="conv-1", model="gpt-4o"), chat(2), b'{"messages": [', b'{"prompt": "no messages"}']
    report, read = _ingest(tmp_path, {"chat.jsonl": b"\n".join(lines) + b"\n"})
    assert (report.parsed, report.quarantined) == (2, 2)
    assert read("quarantine").select("raw_record", "reason").rows() == [(3, "bad_json"), (4, "bad_openai_record")]
    t = read("trajectories").sort("raw_record")
    assert t.select("trajectory_id", "teacher_model", "category", "grade_passed").rows() == [
        ("conv-1", "gpt-4o", "chat", None),
        ("chat:2", "unknown", "chat", None),
    ]
    m = read("messages").filter(pl.col("trajectory_id") == "conv-1").sort("message_index")
    assert m["content"][1] == "Find order ord_00001"  # content parts joined
    p = read("task_packages").row(0, named=True)
    assert p["request"].startswith("Find order") and [t["name"] for t in orjson.loads(p["tools"])] == ["lookup"]


def test_the_batch_can_force_a_format(tmp_path):
    report, read = _ingest(
        tmp_path,
        {".cowork-format": b"openai_chat\n", "a.jsonl": b'{"schema": "cowork.trajectory/v1"}\n' + chat(1) + b"\n"},
    )
    assert (report.parsed, report.quarantined) == (1, 1)  # the cowork-looking line is judged as chat, and fails
    assert read("quarantine")["reason"].to_list() == ["bad_openai_record"]


def test_an_unknown_forced_format_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown format 'csv'"):
        _ingest(tmp_path, {".cowork-format": b"csv", "a.jsonl": chat(1)})


def test_atif_files_become_trajectories(tmp_path):
    broken = {**ATIF, "session_id": "sess-2", "steps": [{"step_id": 1, "message": "no source"}]}
    report, read = _ingest(
        tmp_path,
        {"trial-1.json": orjson.dumps(ATIF), "trial-2.json": orjson.dumps(broken), "trial-3.json": b"{not json"},
    )
    assert (report.parsed, report.quarantined) == (1, 2)
    assert sorted(read("quarantine").select("raw_file", "reason").rows()) == [
        ("b/trial-2.json", "bad_atif_record"),
        ("b/trial-3.json", "bad_json"),
    ]
    m = read("messages").sort("message_index")
    assert m["role"].to_list() == ["system", "user", "assistant", "tool", "assistant"]
    assert m["tool_calls"][2][0]["arguments"] == '{"q":"ord_77777"}' and m["tool_call_id"][3] == "t1"
    assert read("trajectories").select("trajectory_id", "teacher_model").rows() == [("sess-1", "gpt-x")]
    calls = read("tool_calls")
    assert calls.select("tool_name", "observation_index").rows() == [("lookup", 3)]


def test_chat_data_has_grounding_evidence_only_and_reaches_sft_when_ungraded_runs_are_accepted(tmp_path):
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    (tmp_path / "raw" / "chat").mkdir(parents=True)
    (tmp_path / "raw" / "chat" / "a.jsonl").write_bytes(b"\n".join(chat(i) for i in range(3)) + b"\n")
    (tmp_path / "raw" / "chat" / "run.json").write_bytes(orjson.dumps(ATIF))
    instance = ensure_instance(tmp_path / "home")
    strict = CurateSettings(raw_root=str(tmp_path / "raw"), data_root=str(tmp_path / "strict"))
    assert materialize_all(strict, instance, echo=lambda _: None).failed == {}
    evidence = TABLES["evidence"].scan(strict.local_root).collect()
    assert set(evidence["source"]) == {"grounding"} and set(evidence["status"]) == {"given"}
    reasons = (
        TABLES["exclusions"].read(strict.local_root).filter(pl.col("criterion") == "grade", pl.col("dataset") == "sft")
    )
    assert set(reasons["reason"]) == {"not graded"} and reasons.height == 4
    lenient = strict.model_copy(update={"data_root": str(tmp_path / "lenient"), "accept_ungraded": True})
    assert materialize_all(lenient, instance, echo=lambda _: None).failed == {}
    sft = pl.read_parquet(lenient.local_root / "published" / "sft_dataset" / "current" / "*.parquet")
    assert set(sft["sample_id"]) == {"a:1", "a:2", "a:3", "sess-1"}
