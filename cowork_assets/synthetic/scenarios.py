"""Task templates. Each builds one *part* of a task: the user's words, the slice of initial state,
the grading checks, the correct plan, a plausible wrong plan, and the values the grader needs.

Records the agent must pick sit at a random position of a long observation, so a share of the needed
ids and amounts lie beyond the first 1,000 characters.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import orjson

from cowork_assets.synthetic import services as S
from cowork_assets.synthetic import vocab as V


@dataclass
class Step:
    tool: str
    args: dict
    observation: str


@dataclass
class Part:
    services: tuple[str, ...]
    request: str
    state: dict
    checks: list[dict]
    steps: list[Step]
    answer: str
    wrong_steps: list[Step]
    wrong_answer: str
    wrong_fails: set[str]
    needed: list[str] = field(default_factory=list)  # values the correct plan takes from the workspace
    wrong_needed: list[str] = field(default_factory=list)  # ... and those the wrong plan takes
    creation: tuple[str, str, int] | None = None  # (tool, key, count asked for)


def _obs(rng: random.Random, value) -> str:
    if rng.random() < 0.5:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    return orjson.dumps(value).decode()


def _place(rng: random.Random, target: dict, others: list[dict]) -> list[dict]:
    records = list(others)
    records.insert(rng.randint(0, len(records)), target)
    return records


def _people(rng: random.Random, ids: S.Ids, n: int) -> tuple[dict, dict, list[dict]]:
    """A target contact, a same-first-name distractor, and the search result list holding both."""
    first = rng.choice(V.FIRST)
    last, other_last = rng.sample(V.LAST, 2)
    target = S.contact(rng, ids, first, last)
    distractor = S.contact(rng, ids, first, other_last)
    others = [distractor] + [S.contact(rng, ids, first, rng.choice(V.LAST)) for _ in range(n)]
    rng.shuffle(others)
    return target, distractor, _place(rng, target, others)


def message_contact(rng: random.Random, ids: S.Ids) -> Part:
    target, wrong, found = _people(rng, ids, rng.randint(5, 16))
    title = rng.choice(V.PROJECTS)
    doc = S.document(rng, ids, title.title())
    docs = _place(
        rng,
        doc,
        [
            S.document(rng, ids, f"{title.title()} {s}")
            for s in rng.sample(["draft", "v1", "notes", "old", "archive", "appendix", "comments"], rng.randint(2, 6))
        ],
    )
    text = f"Hi {target['name'].split()[0]}, here is the {title} link: {doc['link']}"
    search_c = Step("contacts_search", {"query": target["name"].split()[0]}, _obs(rng, found))
    search_d = Step("documents_search", {"query": title}, _obs(rng, docs))
    sent = _obs(rng, {"status": "sent", "message_id": ids.new("sm")})
    return Part(
        services=("contacts", "documents"),
        request=f"Text {target['name']} the {title} link.",
        state={"contacts": found, "documents": docs},
        checks=[
            {
                "id": "sent",
                "type": "tool_called",
                "tool": "contacts_send_message",
                "args": {"contact_id": target["id"]},
            },
            {"id": "link", "type": "keywords_present", "keywords": [doc["link"]], "evidence": [doc["link"]]},
        ],
        steps=[search_c, search_d, Step("contacts_send_message", {"contact_id": target["id"], "text": text}, sent)],
        answer=f"I texted {target['name']} the {title} link ({doc['link']}).",
        wrong_steps=[
            search_c,
            search_d,
            Step("contacts_send_message", {"contact_id": wrong["id"], "text": text}, sent),
        ],
        wrong_answer=f"I texted {wrong['name']} the {title} link ({doc['link']}).",
        wrong_fails={"sent"},
        needed=[target["id"], doc["link"]],
        wrong_needed=[wrong["id"], doc["link"]],
    )


def approve_expense(rng: random.Random, ids: S.Ids) -> Part:
    month = rng.randint(1, 11)
    reports = [S.expense(rng, ids, month) for _ in range(rng.randint(8, 26))]
    target, wrong = rng.sample(reports, 2)
    amount = f"{float(target['amount']):,.2f}"
    listing = Step("expenses_list", {"month": V.MONTHS[month - 1]}, _obs(rng, reports))
    ok = _obs(rng, {"id": target["id"], "status": "approved"})
    return Part(
        services=("expenses",),
        request=(
            f"Approve {target['submitted_by']}'s {target['merchant']} expense from "
            f"{V.MONTHS[month - 1]} and tell me the amount."
        ),
        state={"expenses": reports},
        checks=[
            {"id": "approved", "type": "tool_called", "tool": "expenses_approve", "args": {"expense_id": target["id"]}},
            {"id": "not_rejected", "type": "tool_not_called", "tool": "expenses_reject"},
            {"id": "status", "type": "state_equals", "path": f"expenses.{target['id']}.status", "value": "approved"},
            {"id": "amount", "type": "keywords_present", "keywords": [amount], "weight": 0.5},
        ],
        steps=[listing, Step("expenses_approve", {"expense_id": target["id"]}, ok)],
        answer=f"Approved {target['id']} ({target['merchant']}) for ${amount}.",
        wrong_steps=[listing, Step("expenses_approve", {"expense_id": wrong["id"]}, ok)],
        wrong_answer=f"Approved {wrong['id']} ({wrong['merchant']}) for ${float(wrong['amount']):,.2f}.",
        wrong_fails={"approved", "status", "amount"},
        needed=[target["id"], amount],
        wrong_needed=[wrong["id"]],
    )


def create_todos(rng: random.Random, ids: S.Ids) -> Part:
    k = rng.randint(2, 5)
    project = rng.choice(V.PROJECTS)
    titles = [f"{v} {o}" for v, o in zip(rng.sample(V.TODO_VERBS, k), rng.sample(V.TODO_OBJECTS, k))]
    said = V.NUMBER_WORDS[k] if rng.random() < 0.5 else str(k)
    steps = [
        Step("todos_create", {"title": t}, _obs(rng, {"id": ids.new("t"), "title": t, "status": "open"}))
        for t in titles
    ]
    return Part(
        services=("todos",),
        request=f"Add {said} todos for the {project}: " + "; ".join(titles) + ".",
        state={"todos": []},
        checks=[
            {"id": "todos", "type": "distinct_items", "tool": "todos_create", "key": "title", "expected": k},
            {"id": "created", "type": "tool_called", "tool": "todos_create", "min_calls": k},
        ],
        steps=steps,
        answer=f"Added {k} todos for the {project}.",
        wrong_steps=steps[:-1],
        wrong_answer=f"Added {k - 1} todos for the {project}.",
        wrong_fails={"todos", "created"},
        creation=("todos_create", "title", k),
    )


def schedule_meeting(rng: random.Random, ids: S.Ids) -> Part:
    target, wrong, found = _people(rng, ids, rng.randint(4, 14))
    day = S.date(rng, 12)
    start = f"{day}T{rng.randint(9, 16):02d}:{rng.choice(['00', '30'])}"
    title = f"{rng.choice(V.PROJECTS).title()} sync"
    events = [
        {
            "id": ids.new("ev"),
            "title": f"{rng.choice(V.PROJECTS).title()} review",
            "start": f"{day}T0{h}:00",
            "attendees": [S.contact(rng, ids, rng.choice(V.FIRST), rng.choice(V.LAST))["email"]],
            "location": rng.choice(V.CITIES),
            "description": S.sentence(rng, 8, 16),
        }
        for h in (8, 9)
    ]
    search = Step("contacts_search", {"query": target["name"]}, _obs(rng, found))
    look = Step("calendar_list_events", {"date": day}, _obs(rng, events))
    made = _obs(rng, {"id": ids.new("ev"), "status": "created"})
    return Part(
        services=("contacts", "calendar"),
        request=f"Schedule a meeting '{title}' with {target['name']} on {day} at {start[-5:]}.",
        state={"contacts": found, "calendar": events},
        checks=[
            {
                "id": "event",
                "type": "tool_called",
                "tool": "calendar_create_event",
                "args": {"attendees": [target["email"]], "start": start},
            },
            {"id": "no_delete", "type": "tool_not_called", "tool": "calendar_delete_event"},
        ],
        steps=[
            search,
            look,
            Step("calendar_create_event", {"title": title, "start": start, "attendees": [target["email"]]}, made),
        ],
        answer=f"Booked '{title}' with {target['name']} ({target['email']}) at {start}.",
        wrong_steps=[
            search,
            look,
            Step("calendar_create_event", {"title": title, "start": start, "attendees": [wrong["email"]]}, made),
        ],
        wrong_answer=f"Booked '{title}' with {wrong['name']} ({wrong['email']}) at {start}.",
        wrong_fails={"event"},
        needed=[target["email"]],
        wrong_needed=[wrong["email"]],
    )


def mail_tracking(rng: random.Random, ids: S.Ids) -> Part:
    vendor = rng.choice(V.VENDORS)
    tracking, other = ids.token("1Z"), ids.token("1Z")
    sender = f"shipping@{vendor.lower().replace(' ', '').replace('&', '')}.example"
    target = S.email(rng, ids, sender, f"Your {vendor} order has shipped", f"Tracking number: {tracking}.")
    older = S.email(rng, ids, sender, f"Your {vendor} return label", f"Return tracking number: {other}.")
    mails = _place(
        rng, target, [older] + [S.email(rng, ids, sender, f"{vendor} newsletter") for _ in range(rng.randint(2, 6))]
    )
    search = Step("mail_search", {"query": vendor}, _obs(rng, mails))
    return Part(
        services=("mail",),
        request=f"What's the tracking number in the shipping email from {vendor}?",
        state={"mail": mails},
        checks=[
            {"id": "tracking", "type": "keywords_present", "keywords": [tracking], "weight": 2},
            {"id": "searched", "type": "tool_called", "tool": "mail_search"},
        ],
        steps=[search],
        answer=f"The tracking number is {tracking}.",
        wrong_steps=[search],
        wrong_answer=f"The tracking number is {other}.",
        wrong_fails={"tracking"},
        needed=[tracking],
    )


def forward_doc(rng: random.Random, ids: S.Ids) -> Part:
    target, wrong, found = _people(rng, ids, rng.randint(4, 12))
    title = rng.choice(V.PROJECTS)
    doc = S.document(rng, ids, title.title())
    docs = _place(
        rng, doc, [S.document(rng, ids, f"{title.title()} {s}") for s in rng.sample(["v2", "draft", "notes", "old"], 3)]
    )
    search_c = Step("contacts_search", {"query": target["name"]}, _obs(rng, found))
    search_d = Step("documents_search", {"query": title}, _obs(rng, docs))
    body = f"Hi {target['name'].split()[0]}, the {title} is here: {doc['link']}"
    sent = _obs(rng, {"status": "queued", "id": ids.new("m")})
    return Part(
        services=("contacts", "documents", "mail"),
        request=f"Email the {title} link to {target['name']}.",
        state={"contacts": found, "documents": docs, "mail": []},
        checks=[
            {"id": "mailed", "type": "tool_called", "tool": "mail_send", "args": {"to": target["email"]}},
            {"id": "link", "type": "keywords_present", "keywords": [doc["link"]]},
        ],
        steps=[search_c, search_d, Step("mail_send", {"to": target["email"], "subject": title, "body": body}, sent)],
        answer=f"Emailed the {title} link to {target['name']} at {target['email']}: {doc['link']}",
        wrong_steps=[
            search_c,
            search_d,
            Step("mail_send", {"to": wrong["email"], "subject": title, "body": body}, sent),
        ],
        wrong_answer=f"Emailed the {title} link to {wrong['name']} at {wrong['email']}: {doc['link']}",
        wrong_fails={"mailed"},
        needed=[target["email"], doc["link"]],
        wrong_needed=[wrong["email"], doc["link"]],
    )


def bulk_review(rng: random.Random, ids: S.Ids) -> Part:
    """A long multi-step review: used for samples that stay over the character budget."""
    month = rng.randint(1, 11)
    reports = [S.expense(rng, ids, month, detailed=True) for _ in range(rng.randint(48, 56))]
    listing = Step(
        "expenses_list",
        {"month": V.MONTHS[month - 1]},
        _obs(rng, [{k: r[k] for k in ("id", "submitted_by", "merchant", "amount", "status")} for r in reports]),
    )
    steps = [listing] + [Step("expenses_get", {"expense_id": r["id"]}, _obs(rng, r)) for r in reports]
    return Part(
        services=("expenses",),
        request=f"Go through every pending {V.MONTHS[month - 1]} expense in detail and tell me which look unusual.",
        state={"expenses": reports},
        checks=[{"id": "reviewed", "type": "tool_called", "tool": "expenses_get", "min_calls": len(reports)}],
        steps=steps,
        answer=f"I reviewed all {len(reports)} expenses; none look unusual.",
        wrong_steps=steps[:-3],
        wrong_answer=f"I reviewed {len(reports) - 3} expenses; none look unusual.",
        wrong_fails={"reviewed"},
        needed=[r["id"] for r in reports],
        wrong_needed=[r["id"] for r in reports[:-3]],
    )


TEMPLATES = {
    "message_contact": message_contact,
    "approve_expense": approve_expense,
    "create_todos": create_todos,
    "schedule_meeting": schedule_meeting,
    "mail_tracking": mail_tracking,
    "forward_doc": forward_doc,
}
