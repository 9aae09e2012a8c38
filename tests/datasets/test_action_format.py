"""The published chat form (`chat_form`): a text-protocol action (a shell block or an XML-style call in the assistant's
text, a call of type `text` inside the pipeline) is published once: as the agent wrote it (`native`) or as a tool
call, the block the harness executed taken out of the text; and every message is one mainstream chat templates
render (text content, one system message first, no tool message without its call)."""

import polars as pl
import pytest

from cowork_assets.chat_form import published_messages, with_action_format
from cowork_assets.store.models import TOOL_CALL


def _call(cid: str, kind: str, name: str, arguments: str) -> dict:
    return {"id": cid, "type": kind, "name": name, "arguments": arguments}


def _message(i: int, role: str, content: str, calls=(), call_id=None, name=None) -> dict:
    return dict(
        batch="b",
        trajectory_id="t",
        message_index=i,
        role=role,
        content=content,
        reasoning_content=None,
        tool_calls=list(calls),
        tool_call_id=call_id,
        name=name,
    )


ROWS = [
    _message(0, "user", "fix it"),
    _message(
        1, "assistant", "Let me look.\n\n```bash\nls -la\n```", [_call("c1", "text", "bash", '{"command":"ls -la"}')]
    ),
    _message(2, "tool", "a.py", call_id="c1", name="bash"),
    _message(
        3,
        "assistant",
        "Edit.\n<function=edit><parameter=path>a.py</parameter></function>",
        [_call("c3", "text", "edit", '{"path":"a.py"}')],
    ),
    _message(4, "tool", "edited", call_id="c3", name="edit"),
    _message(5, "assistant", "", [_call("c5", "function", "submit", "{}")]),  # a native call stays as it is
    _message(6, "tool", "ok", call_id="c5", name="submit"),
]


@pytest.mark.parametrize(
    "action_format, expected",
    [
        (
            "native",
            [
                ("user", "fix it", [], None),
                ("assistant", "Let me look.\n\n```bash\nls -la\n```", [], None),
                ("user", "a.py", [], None),
                ("assistant", "Edit.\n<function=edit><parameter=path>a.py</parameter></function>", [], None),
                ("user", "edited", [], None),
                ("assistant", "", [("c5", "function")], None),
                ("tool", "ok", [], "c5"),
            ],
        ),
        (
            "tool_calls",
            [
                ("user", "fix it", [], None),
                ("assistant", "Let me look.", [("c1", "function")], None),
                ("tool", "a.py", [], "c1"),
                ("assistant", "Edit.", [("c3", "function")], None),
                ("tool", "edited", [], "c3"),
                ("assistant", "", [("c5", "function")], None),
                ("tool", "ok", [], "c5"),
            ],
        ),
    ],
)
def test_each_action_is_published_once(action_format, expected):
    frame = pl.DataFrame(ROWS, schema_overrides={"tool_calls": pl.List(TOOL_CALL)})
    out = with_action_format(frame, action_format)
    got = [
        (m["role"], m["content"], [(c["id"], c["type"]) for c in m["tool_calls"]], m["tool_call_id"])
        for m in out.iter_rows(named=True)
    ]
    assert got == expected


def _rows(*messages) -> pl.DataFrame:
    return pl.DataFrame(list(messages), schema_overrides={"tool_calls": pl.List(TOOL_CALL)})


def _published(frame: pl.DataFrame, action_format: str = "native") -> list[tuple]:
    out = with_action_format(published_messages(frame), action_format)
    return [(m["role"], m["content"], [c["type"] for c in m["tool_calls"]]) for m in out.iter_rows(named=True)]


def test_the_block_the_harness_executed_is_the_one_taken_out():
    """SWE-agent runs the last block of a response: a turn that shows an earlier block keeps it as text."""
    text = "First look:\n```bash\nls\n```\nThen run:\n```bash\npytest -x\n```"
    frame = _rows(
        _message(0, "user", "fix it"),
        _message(1, "assistant", text, [_call("c1", "text", "bash", '{"command":"pytest -x"}')]),
        _message(2, "tool", "1 failed", call_id="c1", name="bash"),
        _message(3, "assistant", "done"),
    )
    assert _published(frame, "tool_calls")[1] == ("assistant", "First look:\n```bash\nls\n```\nThen run:", ["function"])
    # native: the turn as written, the output the user turn the harness sent
    assert _published(frame)[1:3] == [("assistant", text, []), ("user", "1 failed", [])]


def test_every_message_is_one_templates_render():
    frame = _rows(
        _message(0, "system", "You are Codex."),
        _message(1, "system", "<permissions instructions>"),
        _message(2, "user", "fix it"),
        _message(3, "assistant", None, [_call("c3", "function", "shell", '{"cmd":"ls"}')]),
        _message(4, "tool", "a.py", call_id="c3", name="shell"),
        _message(5, "assistant", "I could not parse that"),
        _message(6, "tool", "ERROR: no valid JSON", call_id="?", name=None),  # answers no call
        _message(7, "system", "Context was summarised."),
        _message(8, "assistant", "done"),
        _message(9, "user", "###STOP###"),
    )
    assert _published(frame) == [
        ("system", "You are Codex.\n\n<permissions instructions>", []),
        ("user", "fix it", []),
        ("assistant", "", ["function"]),
        ("tool", "a.py", []),
        ("assistant", "I could not parse that", []),
        ("user", "ERROR: no valid JSON", []),
        ("user", "Context was summarised.", []),
        ("assistant", "done", []),
    ]
