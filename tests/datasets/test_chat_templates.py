"""Published SFT samples through real tool-aware chat templates (Qwen2.5-style and Llama-3.1-style, in
tests/templates) and through the OpenAI and LLaMA-Factory exports: arguments stay JSON objects, tool
results follow their calls, and every sample ends with an assistant turn."""

import json
import re

import orjson
import polars as pl
import pytest

from cowork_assets.datasets.export import llamafactory, openai_jsonl, sharegpt
from cowork_assets.trainers import for_chat_template
from tests.test_rewards import render


@pytest.fixture(scope="module")
def samples(pipeline):
    settings, _, _ = pipeline
    rows = pl.read_parquet(settings.local_root / "published" / "sft_dataset" / "current" / "*.parquet")
    assert rows.height > 50
    return settings, rows.select("sample_id", "messages", "tools").rows()


def _blocks(text: str, start: str, end: str) -> list[str]:
    return re.findall(re.escape(start) + r"(.*?)" + re.escape(end), text, re.S)


def test_qwen_style_rendering_keeps_arguments_as_objects(samples):
    _, rows = samples
    calls_seen = 0
    for sample_id, messages, tools in rows:
        chat, tool_list = for_chat_template(messages, tools)
        text = render("qwen2.5.jinja", chat, tool_list)
        conversation = text.split("<|im_end|>", 1)[1]  # after the system turn (its format example has a call)
        for block in _blocks(conversation, "<tool_call>\n", "\n</tool_call>"):
            call = json.loads(block)
            assert isinstance(call["arguments"], dict), (sample_id, block)
            calls_seen += 1
        # tool results follow their calls: each response block comes after a call block in the same exchange
        turns = text.split("<|im_start|>")
        for i, turn in enumerate(turns):
            if "<tool_response>" in turn:
                assert turns[i - 1].startswith("assistant") and "<tool_call>" in turns[i - 1], sample_id
        assert turns[-1].startswith("assistant") and "<tool_response>" not in turns[-1], sample_id
        assert chat[-1]["role"] == "assistant"
    assert calls_seen > 100
    # What the helper prevents: the stored JSON strings through `tojson` come out encoded twice.
    _, messages, tools = next(r for r in rows if any(m["tool_calls"] for m in r[1]))
    raw = render(
        "qwen2.5.jinja", [{k: v for k, v in m.items() if v is not None} for m in messages], orjson.loads(tools)
    )
    first = _blocks(raw.split("<|im_end|>", 1)[1], "<tool_call>\n", "\n</tool_call>")[0]
    assert isinstance(json.loads(first)["arguments"], str)


def test_llama_style_rendering_keeps_arguments_as_objects(samples):
    _, rows = samples
    for sample_id, messages, tools in rows:
        chat, tool_list = for_chat_template(messages, tools)
        text = render("llama3.1.jinja", chat, tool_list)
        headers = re.findall(r"<\|start_header_id\|>(\w+)<\|end_header_id\|>", text)
        assert headers[-1] == "assistant", sample_id
        for turn in text.split("<|start_header_id|>assistant<|end_header_id|>\n\n")[1:]:
            for line in turn.split("<|e")[0].splitlines():
                if line.startswith('{"name"'):
                    assert isinstance(json.loads(line)["parameters"], dict), (sample_id, line)
        for i, role in enumerate(headers):
            if role == "ipython":
                assert headers[i - 1] in ("assistant", "ipython"), sample_id


def test_the_openai_export_keeps_arguments_single_encoded(samples, tmp_path):
    settings, rows = samples
    out = tmp_path / "train.jsonl"
    written = openai_jsonl(settings.root, out, split=None)
    assert written == len(rows)
    for line in out.read_text().splitlines():
        messages = orjson.loads(line)["messages"]
        pending: set[str] = set()
        for m in messages:
            for c in m.get("tool_calls") or []:
                assert isinstance(c["function"]["arguments"], str)
                assert isinstance(orjson.loads(c["function"]["arguments"]), dict)
                pending.add(c["id"])
            if m["role"] == "tool":
                assert m["tool_call_id"] in pending
        assert messages[-1]["role"] == "assistant"


def test_the_llamafactory_export_keeps_arguments_as_objects(samples, tmp_path):
    settings, rows = samples
    assert llamafactory(settings.root, tmp_path, split=None) == len(rows)
    records = orjson.loads((tmp_path / "cowork_sft.json").read_bytes())
    for record in records:
        turns = record["conversations"]
        for i, turn in enumerate(turns):
            if turn["from"] == "function_call":
                calls = orjson.loads(turn["value"])
                for call in calls if isinstance(calls, list) else [calls]:
                    assert isinstance(call["arguments"], dict)
            if turn["from"] == "observation":
                assert turns[i - 1]["from"] == "function_call"
        assert turns[-1]["from"] in ("gpt", "function_call")


def test_reasoning_renders_first_in_its_assistant_turn_and_nowhere_else():
    """Qwen3-style: an assistant turn's reasoning_content as <think>...</think> before its text and its calls."""
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": {"path": "."}}}
    chat = [
        {"role": "user", "content": "list it"},
        {"role": "assistant", "content": "", "reasoning_content": "look first", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        {"role": "assistant", "content": "a.py", "reasoning_content": "one file"},
        {"role": "assistant", "content": "done"},
    ]
    text = render("qwen2.5.jinja", chat, [])
    turns = text.split("<|im_start|>assistant\n")[1:]
    assert turns[0].startswith("<think>\nlook first\n</think>\n\n<tool_call>\n")
    assert turns[1].startswith("<think>\none file\n</think>\n\na.py<|im_end|>")
    assert turns[2] == "done<|im_end|>\n" and text.count("<think>") == 2
    _, llamafactory_turns = sharegpt([{**m, "tool_calls": None} for m in chat[3:]])
    assert [t["value"] for t in llamafactory_turns] == ["<think>\none file\n</think>\n\na.py", "done"]
