"""A text-protocol action (a shell block or an XML-style call in the assistant's text, a call of type `text` inside
the pipeline) is published once: as the agent wrote it (`native`) or as a tool call taken out of the text."""

import polars as pl
import pytest

from cowork_assets.datasets.sft import with_action_format
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
