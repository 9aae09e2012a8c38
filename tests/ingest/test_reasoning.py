"""An assistant turn's reasoning wherever its provider wrote it (`ingest/reasoning.py`), read by every reader through
that one home: as each provider's API returns it, in the records the readers take (an OpenAI-style chat record, a
mini-swe-agent run through OpenRouter, a ShareGPT record of a reasoning model), and from the
real Claude Code sessions of the conformance corpus."""

from __future__ import annotations

import orjson
import polars as pl
import pytest

from cowork_assets.ingest.batch import ingest_batch
from cowork_assets.ingest.reasoning import assistant_turn
from cowork_assets.store.registry import TABLES
from tests.conftest import TESTS

CALL = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}


@pytest.mark.parametrize(
    "message, expected",
    [
        ({"content": "a", "reasoning_content": "why"}, ("a", "why")),  # DeepSeek, vLLM, SGLang
        ({"content": "a", "reasoning": "why"}, ("a", "why")),  # OpenRouter, vLLM
        (  # OpenRouter writes the same text in both fields: once
            {"content": "a", "reasoning": "why", "reasoning_details": [{"type": "reasoning.text", "text": "why"}]},
            ("a", "why"),
        ),
        (
            {
                "content": "a",
                "reasoning_details": [
                    {"type": "reasoning.text", "text": "first"},
                    {"type": "reasoning.encrypted", "data": "b64..."},
                    {"type": "reasoning.summary", "summary": "second"},
                ],
            },
            ("a", "first\n\nsecond"),
        ),
        ({"content": "a", "thinking": "why"}, ("a", "why")),  # Ollama
        (  # Anthropic content blocks
            {"content": [{"type": "thinking", "thinking": "why", "signature": "s"}, {"type": "text", "text": "a"}]},
            ("a", "why"),
        ),
        ({"content": [{"type": "redacted_thinking", "data": "x"}, {"type": "text", "text": "a"}]}, ("a", None)),
        ({"content": [{"text": "why", "thought": True}, {"text": "a"}]}, ("a", "why")),  # Gemini parts
        ({"content": "<think>\nwhy\n</think>\n\na"}, ("a", "why")),  # DeepSeek-R1, QwQ served without a parser
        ({"content": "Use <think> tags like <think>x</think>"}, ("Use <think> tags like <think>x</think>", None)),
        ({"content": "<think>never closed"}, ("<think>never closed", None)),
        ({"content": None, "tool_calls": [CALL]}, (None, None)),
    ],
)
def test_reasoning_is_read_from_every_place_providers_write_it(message, expected):
    assert assistant_turn(message) == expected


def _read(tmp_path, files: dict[str, bytes]) -> pl.DataFrame:
    folder = tmp_path / "raw" / "b"
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    ingest_batch(tmp_path / "raw", "b", tmp_path / "out")
    messages = TABLES["messages"].read(tmp_path / "out", "b")
    return messages.filter(pl.col("role") == "assistant").sort("trajectory_id", "message_index")


def test_every_reader_takes_reasoning_from_the_one_home(tmp_path):
    openrouter = {  # mini-swe-agent 1.1 through LiteLLM and OpenRouter (gemini-3-pro): `reasoning` + details
        "trajectory_format": "mini-swe-agent-1.1",
        "instance_id": "repo__1",
        "info": {"exit_status": "Submitted"},
        "messages": [
            {"role": "user", "content": "Fix 1"},
            {
                "role": "assistant",
                "content": None,
                "reasoning": "**Inspecting** the tree first.",
                "reasoning_details": [{"type": "reasoning.text", "text": "**Inspecting** the tree first."}],
                "tool_calls": [CALL],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
            {"role": "assistant", "content": "done", "reasoning_details": [{"type": "reasoning.text", "text": "ok"}]},
        ],
    }
    chat = {  # an OpenAI-style chat record whose assistant wrote Gemini thought parts
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"text": "Greet back.", "thought": True}, {"text": "Hello!"}]},
        ]
    }
    sharegpt = {
        "conversations": [
            {"from": "human", "value": "2+2?"},
            {"from": "gpt", "value": "<think>\nAdd them.\n</think>\n\n4"},
        ]
    }
    got = _read(
        tmp_path,
        {
            "run.traj.json": orjson.dumps(openrouter),
            "chat.jsonl": orjson.dumps(chat) + b"\n",
            "sharegpt.jsonl": orjson.dumps(sharegpt) + b"\n",
        },
    )
    rows = got.select("trajectory_id", "content", "reasoning_content").rows()
    assert [r[1:] for r in rows if r[0] == "run"] == [(None, "**Inspecting** the tree first."), ("done", "ok")]
    assert [r[1:] for r in rows if r[0].startswith("chat")] == [("Hello!", "Greet back.")]
    assert [r[1:] for r in rows if r[0].startswith("sharegpt")] == [("4", "Add them.")]


def test_real_claude_code_thinking_blocks_are_reasoning_not_text(tmp_path):
    session = TESTS / "conformance" / "claude_code" / "spotter-2.1.38" / "spotter_short.jsonl"
    thinking = [
        block["thinking"]
        for line in session.read_text().splitlines()
        for block in ((orjson.loads(line).get("message") or {}).get("content") or [])
        if isinstance(block, dict) and block.get("type") == "thinking" and block.get("thinking")
    ]
    assert thinking
    got = _read(tmp_path, {session.name: session.read_bytes()})
    published = "\n".join(got["reasoning_content"].drop_nulls())
    assert all(t in published for t in thinking)
    assert not any(t in (c or "") for t in thinking for c in got["content"])
