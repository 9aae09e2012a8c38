"""The synthetic workspace services: their tool interface and realistic JSON records."""

from __future__ import annotations

import random

from cowork_assets.synthetic import vocab as V


def _tool(name: str, endpoint: str, description: str, **params: tuple[str, str]) -> dict:
    props = {k: {"type": t, "description": d} for k, (t, d) in params.items()}
    for p in props.values():
        if p["type"] == "array":
            p["items"] = {"type": "string"}
    return {
        "name": name,
        "endpoint": endpoint,
        "description": description,
        "parameters": {"type": "object", "properties": props, "required": sorted(props)},
    }


TOOLS: dict[str, list[dict]] = {
    "contacts": [
        _tool(
            "contacts_search",
            "GET /contacts/search",
            "Search contacts by name, email or company.",
            query=("string", "free-text query"),
        ),
        _tool(
            "contacts_send_message",
            "POST /contacts/send_message",
            "Send a text message to a contact.",
            contact_id=("string", "contact id"),
            text=("string", "message body"),
        ),
    ],
    "todos": [
        _tool("todos_list", "GET /todos", "List open todos."),
        _tool("todos_create", "POST /todos/create", "Create a todo.", title=("string", "todo title")),
        _tool("todos_complete", "POST /todos/complete", "Mark a todo done.", todo_id=("string", "todo id")),
    ],
    "calendar": [
        _tool("calendar_list_events", "GET /calendar/events", "Events on a date.", date=("string", "YYYY-MM-DD")),
        _tool(
            "calendar_create_event",
            "POST /calendar/events",
            "Create an event.",
            title=("string", "event title"),
            start=("string", "ISO start time"),
            attendees=("array", "attendee emails"),
        ),
        _tool("calendar_delete_event", "DELETE /calendar/events", "Delete an event.", event_id=("string", "event id")),
    ],
    "mail": [
        _tool("mail_search", "GET /mail/search", "Search the mailbox.", query=("string", "free-text query")),
        _tool(
            "mail_send",
            "POST /mail/send",
            "Send an email.",
            to=("string", "recipient email"),
            subject=("string", "subject"),
            body=("string", "body"),
        ),
    ],
    "expenses": [
        _tool("expenses_list", "GET /expenses", "List expense reports for a month.", month=("string", "month name")),
        _tool("expenses_get", "GET /expenses/{id}", "One expense report in full.", expense_id=("string", "expense id")),
        _tool("expenses_approve", "POST /expenses/approve", "Approve an expense.", expense_id=("string", "expense id")),
        _tool(
            "expenses_reject",
            "POST /expenses/reject",
            "Reject an expense.",
            expense_id=("string", "expense id"),
            reason=("string", "why"),
        ),
    ],
    "documents": [
        _tool("documents_search", "GET /documents/search", "Search documents by title.", query=("string", "query")),
        _tool(
            "documents_share",
            "POST /documents/share",
            "Share a document.",
            doc_id=("string", "document id"),
            email=("string", "recipient email"),
        ),
    ],
}

# Endpoints a sloppy task package uses instead of the exposed one (the injected inconsistency).
UNEXPOSED = {
    "contacts_send_message": ("contacts_send", "POST /contacts/send"),
    "todos_create": ("todos_add", "POST /todos/add"),
    "mail_send": ("mail_send_email", "POST /mail/send_email"),
    "expenses_approve": ("expenses_accept", "POST /expenses/accept"),
}


def sentence(rng: random.Random, lo: int, hi: int) -> str:
    start = rng.randrange(len(V.WORDS))
    n = rng.randint(lo, hi)
    words = [V.WORDS[(start + i) % len(V.WORDS)] for i in range(n)]
    return " ".join(words).capitalize() + "."


def date(rng: random.Random, month: int | None = None) -> str:
    return f"2026-{month or rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}"


class Ids:
    """Unique, fixed-width ids per prefix, so no id is a substring of another."""

    def __init__(self, rng: random.Random):
        self.rng, self.used = rng, set()

    def new(self, prefix: str, digits: int = 6) -> str:
        while True:
            value = f"{prefix}_{self.rng.randrange(10 ** (digits - 1), 10**digits)}"
            if value not in self.used:
                self.used.add(value)
                return value

    def amount(self) -> str:
        while True:
            value = f"{self.rng.randint(1000, 4999)}.{self.rng.randint(10, 99)}"
            if value not in self.used:
                self.used.add(value)
                return value

    def token(self, prefix: str, n: int = 14) -> str:
        alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
        while True:
            value = prefix + "".join(self.rng.choice(alphabet) for _ in range(n))
            if value not in self.used:
                self.used.add(value)
                return value


def contact(rng: random.Random, ids: Ids, first: str, last: str) -> dict:
    company = rng.choice(V.COMPANIES)
    return {
        "id": ids.new("c"),
        "name": f"{first} {last}",
        "email": f"{first.lower()}.{last.lower()}@{company.lower()}.example",
        "phone": f"+1-555-{rng.randint(1000, 9999)}",
        "company": company,
        "title": rng.choice(V.TITLES),
        "city": rng.choice(V.CITIES),
        "notes": sentence(rng, 10, 24),
        "tags": rng.sample(["client", "vendor", "internal", "vip", "partner", "board"], 2),
        "last_contacted": date(rng),
    }


def expense(rng: random.Random, ids: Ids, month: int, detailed: bool = False) -> dict:
    rec = {
        "id": ids.new("exp"),
        "submitted_by": f"{rng.choice(V.FIRST)} {rng.choice(V.LAST)}",
        "merchant": rng.choice(V.MERCHANTS),
        "category": rng.choice(V.EXPENSE_CATEGORIES),
        "amount": ids.amount(),
        "currency": "USD",
        "date": date(rng, month),
        "status": "pending",
        "memo": sentence(rng, 6, 14),
    }
    if detailed:
        rec["line_items"] = [
            {"description": sentence(rng, 3, 6), "qty": rng.randint(1, 4), "unit_price": f"{rng.randint(5, 400)}.00"}
            for _ in range(rng.randint(3, 6))
        ]
        rec["receipt_text"] = " ".join(sentence(rng, 12, 24) for _ in range(6))
        rec["audit_trail"] = [{"at": date(rng, month), "event": e} for e in ("submitted", "receipt attached", "routed")]
    return rec


def email(rng: random.Random, ids: Ids, sender: str, subject: str, extra: str = "") -> dict:
    paragraphs = [sentence(rng, 18, 40) for _ in range(rng.randint(3, 6))]
    if extra:
        paragraphs.insert(rng.randint(0, len(paragraphs)), extra)
    return {
        "id": ids.new("m"),
        "from": sender,
        "to": "me@workspace.example",
        "subject": subject,
        "date": date(rng),
        "body": "\n\n".join(paragraphs),
        "labels": rng.sample(["inbox", "updates", "receipts", "work", "starred"], 2),
    }


def document(rng: random.Random, ids: Ids, title: str) -> dict:
    slug = title.lower().replace(" ", "-")
    doc_id = ids.new("doc")
    return {
        "id": doc_id,
        "title": title,
        "link": f"https://docs.workspace.example/d/{slug}-{doc_id[4:]}",
        "owner": f"{rng.choice(V.FIRST)} {rng.choice(V.LAST)}",
        "updated_at": date(rng),
        "summary": sentence(rng, 8, 20),
        "size_kb": rng.randint(12, 4000),
    }
