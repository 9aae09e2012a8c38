"""The workspace simulation that answers RL tasks' tool calls, and the verl tool config generated from it."""

import json

import yaml

from cowork_assets.datasets.rl import TOOL_CLASS, verl_tool_config
from cowork_assets.synthetic import services as S
from cowork_assets.synthetic.workspace import SIMULATED, Workspace, simulated

STATE = {
    "contacts": [
        {"id": "c_1", "name": "Ana Lopez", "email": "ana.lopez@acme.example"},
        {"id": "c_2", "name": "Ana Kim", "email": "ana.kim@globex.example"},
        {"id": "c_3", "name": "Ben Ito", "email": "ben.ito@acme.example"},
    ],
    "expenses": [
        {"id": "exp_1", "amount": "12.50", "date": "2026-02-04", "status": "pending"},
        {"id": "exp_2", "amount": "99.00", "date": "2026-03-01", "status": "pending"},
    ],
    "calendar": [{"id": "ev_1", "title": "Review", "start": "2026-12-05T09:00", "attendees": []}],
    "todos": [],
}


def call(w: Workspace, tool: str, **args):
    return json.loads(w.call(tool, args))


def test_reads_answer_from_the_state():
    w = Workspace.of(STATE)
    assert [c["id"] for c in call(w, "contacts_search", query="Ana")] == ["c_1", "c_2"]
    assert [c["id"] for c in call(w, "contacts_search", query="ana lopez")] == ["c_1", "c_2"]  # any word
    assert [e["id"] for e in call(w, "expenses_list", month="February")] == ["exp_1"]
    assert call(w, "expenses_get", expense_id="exp_2") == STATE["expenses"][1]
    assert [e["id"] for e in call(w, "calendar_list_events", date="2026-12-05")] == ["ev_1"]
    assert call(w, "calendar_list_events", date="2026-12-06") == []


def test_writes_change_the_state_later_calls_read():
    w = Workspace.of(STATE)
    assert call(w, "expenses_approve", expense_id="exp_1") == {"id": "exp_1", "status": "approved"}
    assert call(w, "expenses_get", expense_id="exp_1")["status"] == "approved"
    first = call(w, "todos_create", title="Book the room")
    second = call(w, "todos_create", title="Send the agenda")
    assert first["id"] != second["id"] and [t["title"] for t in call(w, "todos_list")] == [
        "Book the room",
        "Send the agenda",
    ]
    call(w, "todos_complete", todo_id=first["id"])
    assert [t["id"] for t in call(w, "todos_list")] == [second["id"]]
    made = call(w, "calendar_create_event", title="Sync", start="2026-12-05T10:00", attendees=["a@b.example"])
    assert call(w, "calendar_delete_event", event_id=made["id"])["status"] == "deleted"
    assert call(w, "todos_create", title="After a delete")["id"] not in (first["id"], second["id"], made["id"])
    assert call(w, "contacts_send_message", contact_id="c_3", text="hi")["status"] == "sent"
    assert STATE["expenses"][0]["status"] == "pending" and STATE["todos"] == []  # the task's state is not touched


def test_bad_calls_are_answered_with_an_error():
    w = Workspace.of(STATE)
    assert call(w, "contacts_send_message", contact_id="c_404", text="hi") == {
        "error": "no contacts record with id 'c_404'"
    }
    assert call(w, "expenses_approve") == {"error": "expenses_approve needs expense_id"}
    assert call(w, "expenses_list", month="Smarch") == {"error": "unknown month 'Smarch'"}
    assert call(w, "web_search", query="x") == {"error": "unknown tool 'web_search'"}
    assert json.loads(w.call("todos_create", "not an object")) == {"error": "todos_create takes an object of arguments"}
    assert call(Workspace.of({"contacts": "oops"}), "contacts_search", query="a") == {
        "error": "the contacts service holds no records"
    }


def test_a_package_is_simulated_only_when_every_tool_is_the_services_own():
    own = [SIMULATED["mail_send"], SIMULATED["contacts_search"]]
    assert simulated(own)
    assert not simulated([*own, {"name": "web_search", "endpoint": "GET /search"}])
    assert not simulated([{**SIMULATED["mail_send"], "endpoint": "POST /mail/send_email"}])  # an unexposed endpoint
    assert not simulated([])


def test_the_verl_tool_config_lists_each_simulated_tool_once_with_its_schema():
    config = yaml.safe_load(verl_tool_config(["mail_send", "web_search", "contacts_search", "mail_send"]))
    assert [t["tool_schema"]["function"]["name"] for t in config["tools"]] == ["contacts_search", "mail_send"]
    for tool in config["tools"]:
        assert tool["class_name"] == TOOL_CLASS and tool["config"] == {"type": "native"}
        schema = tool["tool_schema"]["function"]
        assert schema["parameters"] == SIMULATED[schema["name"]]["parameters"]
    assert sum(len(tools) for tools in S.TOOLS.values()) == len(SIMULATED)
