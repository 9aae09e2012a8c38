"""The synthetic workspace services as a simulation: a task's `initial_state` served through its tools.

An RL trainer's tool calls need answers: `Workspace(state).call(tool, args)` answers each tool of
`services.TOOLS` the way the generator's observations look (JSON records, or a status object), reads what
earlier calls wrote, and answers a bad call with `{"error": ...}` instead of raising. The state (one list of
records per service, as in a task's `initial_state`) is changed in place: give each run its own copy
(`Workspace.of`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import orjson

from cowork_assets.synthetic import services as S
from cowork_assets.synthetic import vocab as V

# Every tool the simulation answers: the synthetic services' tool interface.
SIMULATED = {t["name"]: t for tools in S.TOOLS.values() for t in tools}
CREATED = "_created"  # the state's count of records the simulation created


class CallError(Exception):
    """A call the service refuses: its message is the tool's answer."""


def _matches(record: dict, query: str) -> bool:
    """A search hit: any word of the query in any text field (as the services' search ranks, loosely)."""
    text = " ".join(v.casefold() for v in record.values() if isinstance(v, str))
    return any(word in text for word in query.casefold().split())


class Workspace:
    def __init__(self, state: dict):
        self.state = state

    @classmethod
    def of(cls, initial_state: dict) -> Workspace:
        """A workspace on a copy of `initial_state`."""
        return cls(copy.deepcopy(initial_state) if isinstance(initial_state, dict) else {})

    def call(self, tool: str, args: dict) -> str:
        """The tool's answer to one call, as JSON text."""
        handler = _HANDLERS.get(tool)
        if handler is None:
            return _json({"error": f"unknown tool {tool!r}"})
        if not isinstance(args, dict):
            return _json({"error": f"{tool} takes an object of arguments"})
        missing = [p for p in SIMULATED[tool]["parameters"]["required"] if p not in args]
        if missing:
            return _json({"error": f"{tool} needs {', '.join(missing)}"})
        try:
            return _json(handler(self, args))
        except CallError as exc:
            return _json({"error": str(exc)})

    def records(self, service: str) -> list[dict]:
        records = self.state.setdefault(service, [])
        if not isinstance(records, list):
            raise CallError(f"the {service} service holds no records")
        return [r for r in records if isinstance(r, dict)]

    def find(self, service: str, record_id) -> dict:
        found = next((r for r in self.records(service) if r.get("id") == record_id), None)
        if found is None:
            raise CallError(f"no {service} record with id {record_id!r}")
        return found

    def add(self, service: str, prefix: str, record: dict) -> dict:
        self.state[CREATED] = created = self.state.get(CREATED, 0) + 1  # ids stay unique after deletions
        record = {"id": f"{prefix}_sim{created:04d}", **record}
        self.state.setdefault(service, []).append(record)
        return record

    def set_status(self, service: str, record_id, status: str) -> dict:
        record = self.find(service, record_id)
        record["status"] = status
        return {"id": record_id, "status": status}


def _json(value) -> str:
    return orjson.dumps(value).decode()


def _search(service: str) -> Callable[[Workspace, dict], list[dict]]:
    return lambda w, a: [r for r in w.records(service) if _matches(r, str(a["query"]))]


def _month(w: Workspace, a: dict) -> list[dict]:
    name = str(a["month"]).strip().casefold()
    months = [m.casefold() for m in V.MONTHS]
    if name not in months:
        raise CallError(f"unknown month {a['month']!r}")
    prefix = f"-{months.index(name) + 1:02d}-"
    return [r for r in w.records("expenses") if prefix in str(r.get("date", ""))]


def _create_todo(w: Workspace, a: dict) -> dict:
    return w.add("todos", "t", {"title": a["title"], "status": "open"})


def _create_event(w: Workspace, a: dict) -> dict:
    event = w.add("calendar", "ev", {"title": a["title"], "start": a["start"], "attendees": a["attendees"]})
    return {"id": event["id"], "status": "created"}


def _delete_event(w: Workspace, a: dict) -> dict:
    event = w.find("calendar", a["event_id"])
    w.state["calendar"].remove(event)
    return {"id": a["event_id"], "status": "deleted"}


def _send_message(w: Workspace, a: dict) -> dict:
    w.find("contacts", a["contact_id"])
    sent = w.add("messages_sent", "sm", {"contact_id": a["contact_id"], "text": a["text"]})
    return {"status": "sent", "message_id": sent["id"]}


def _send_mail(w: Workspace, a: dict) -> dict:
    mail = w.add("mail", "m", {"from": "me@workspace.example", **{k: a[k] for k in ("to", "subject", "body")}})
    return {"status": "queued", "id": mail["id"]}


def _share(w: Workspace, a: dict) -> dict:
    doc = w.find("documents", a["doc_id"])
    doc.setdefault("shared_with", []).append(a["email"])
    return {"id": a["doc_id"], "status": "shared", "email": a["email"]}


_HANDLERS: dict[str, Callable[[Workspace, dict], object]] = {
    "contacts_search": _search("contacts"),
    "contacts_send_message": _send_message,
    "todos_list": lambda w, a: [r for r in w.records("todos") if r.get("status") != "done"],
    "todos_create": _create_todo,
    "todos_complete": lambda w, a: w.set_status("todos", a["todo_id"], "done"),
    "calendar_list_events": lambda w, a: [
        r for r in w.records("calendar") if str(r.get("start", "")).startswith(a["date"])
    ],
    "calendar_create_event": _create_event,
    "calendar_delete_event": _delete_event,
    "mail_search": _search("mail"),
    "mail_send": _send_mail,
    "expenses_list": _month,
    "expenses_get": lambda w, a: w.find("expenses", a["expense_id"]),
    "expenses_approve": lambda w, a: w.set_status("expenses", a["expense_id"], "approved"),
    "expenses_reject": lambda w, a: w.set_status("expenses", a["expense_id"], "rejected"),
    "documents_search": _search("documents"),
    "documents_share": _share,
}
assert set(_HANDLERS) == set(SIMULATED), "every synthetic tool has a handler"


def simulated(tools: list[dict]) -> bool:
    """Whether the simulation answers every tool of a task package as the package declares it."""
    return bool(tools) and all(
        t.get("name") in SIMULATED and t.get("endpoint") == SIMULATED[t["name"]]["endpoint"] for t in tools
    )
