"""LLaMA-Factory v1 samples: content blocks read as text, reasoning and calls (OpenAI chat's reader, which takes any
`{"messages"}` record, would read their `value` blocks as empty text), results split per call, and plain chat
records left to the OpenAI chat reader."""

from __future__ import annotations

import json

import polars as pl

from cowork_assets.ingest.batch import ingest_batch
from cowork_assets.store.registry import TABLES

CALLS = [{"name": "circle_area", "arguments": {"radius": r}} for r in (1.5, 3)]
SAMPLE = {
    "messages": [
        {"role": "system", "content": [{"type": "text", "value": "Use the tools."}], "loss_weight": 0.0},
        {"role": "user", "content": [{"type": "text", "value": "Areas of radius 1.5 and 3?"}], "loss_weight": 0.0},
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "value": "Two circles: two calls."},
                *({"type": "tool_call", "value": json.dumps(c)} for c in CALLS),
            ],
            "loss_weight": 1.0,
        },
        {"role": "tool", "content": [{"type": "text", "value": json.dumps([{"area": 7.07}, {"area": 28.27}])}]},
        {"role": "assistant", "content": [{"type": "text", "value": "7.07 and 28.27."}], "loss_weight": 1.0},
    ],
    "tools": json.dumps([{"type": "function", "function": {"name": "circle_area", "parameters": {"type": "object"}}}]),
}


def test_blocks_become_text_reasoning_and_calls_each_answered_by_its_own_result(tmp_path):
    batch = tmp_path / "raw" / "b1"
    batch.mkdir(parents=True)
    (batch / "sft.jsonl").write_text(json.dumps(SAMPLE) + "\n")
    chat = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    (batch / "chat.jsonl").write_text(json.dumps(chat) + "\n")
    report = ingest_batch(tmp_path / "raw", "b1", str(tmp_path / "out"))
    assert dict(report.formats) == {"llamafactory": 1, "openai_chat": 1}
    assert (report.parsed, report.quarantined) == (2, 0)
    messages = TABLES["messages"].read(str(tmp_path / "out"), "b1").filter(pl.col("trajectory_id") == "sft:1")
    assert messages.sort("message_index").select("role", "content", "reasoning_content").rows() == [
        ("system", "Use the tools.", None),
        ("user", "Areas of radius 1.5 and 3?", None),
        ("assistant", None, "Two circles: two calls."),
        ("tool", '{"area":7.07}', None),
        ("tool", '{"area":28.27}', None),
        ("assistant", "7.07 and 28.27.", None),
    ]
    calls = TABLES["tool_calls"].read(str(tmp_path / "out"), "b1").sort("call_index")
    assert calls.select("call_id", "tool_name", "arguments", "observation").rows() == [
        ("call_2_0", "circle_area", '{"radius":1.5}', '{"area":7.07}'),
        ("call_2_1", "circle_area", '{"radius":3}', '{"area":28.27}'),
    ]
