"""OpenHands V1 (software-agent-sdk) conversations: the folder the SDK persists one in (`base_state.json`, the
conversation's state: the record, and `events/event-<index>-<event id>.json`, one file an event, read with it in
the order of their indexes: `openhands_event_file`), or its events written one per line (JSON Lines). An event is
typed (`kind`: `SystemPromptEvent`, `MessageEvent`, `ActionEvent`, `ObservationEvent`, `AgentErrorEvent`,
`Condensation`, `ConversationStateUpdateEvent`, ...). A conversation is one run.

Events become messages as in an evaluation output's V1 history (`openhands.v1_conversation`): the system prompt, the
user's and agent's messages, each action a call (the actions of one model response one assistant turn, its `thought`
the text, its reasoning from the one reasoning home), each observation the result of the call its `tool_call_id`
names; an observation of a call the file does not hold is what the agent saw, a user message. State updates are not
messages; the model is the one they report (`stats`), else `unknown`.

**Condensation**: a `Condensation` event replaces the events it forgets with its summary: the model goes on in a new
context. Each context is its own trajectory (`<run>`, `<run>#2`, ...): the new one opens with the system prompt, the
user's messages the condenser kept and the summary (as a user message), then the events after it; no agent turn is
trained twice. The run is the conversation's folder (of `base_state.json`, or of a file named `events.jsonl`), else the
file's name.
There is no grade in the log: runs are ungraded."""

from __future__ import annotations

from collections import defaultdict

from cowork_assets.ingest import recount
from cowork_assets.ingest.formats import _common, openhands_event_file
from cowork_assets.ingest.formats.openhands import v1_conversation, v1_text

NAME = "openhands_events"
PRIORITY = 25
RECORDS = recount.ONE
CONVERSATION = frozenset({"SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent"})


def is_state(doc) -> bool:
    """A conversation's `base_state.json` (the SDK's `ConversationState`)."""
    return isinstance(doc, dict) and "id" in doc and isinstance(doc.get("agent"), dict) and "workspace" in doc


def detect(sample) -> bool:
    if not sample.is_lines:
        return sample.path.name == openhands_event_file.STATE_FILE and is_state(sample.document)
    first = sample.first_objects()
    return (
        bool(first)
        and all(isinstance(e.get("kind"), str) and "id" in e for e in first)
        and any(e["kind"] in CONVERSATION for e in first)
    )


def contexts(events: list[dict], notes) -> list[list[dict]]:
    """The events of each context the model had: a `Condensation` starts a new one."""
    out, current = [], []
    for e in events:
        if e.get("kind") != "Condensation":
            current.append(e)
            continue
        out.append(current)
        forgotten = set(e.get("forgotten_event_ids") or [])
        kept = [
            k
            for k in current
            if k.get("id") not in forgotten
            and (k.get("kind") == "SystemPromptEvent" or k.get("kind") == "MessageEvent" and k.get("source") == "user")
        ]
        summary = e.get("summary")
        current = kept + ([_user(f"{e.get('id')}-summary", summary)] if summary else [])
        notes["openhands_condensations_split_into_contexts"] += 1
    return [*out, current]


def _user(event_id: str, text: str) -> dict:
    return {"id": event_id, "kind": "MessageEvent", "source": "user", "llm_message": {"role": "user", "content": text}}


def model_of(events: list[dict]) -> str:
    for e in events:
        value = e.get("value") if e.get("kind") == "ConversationStateUpdateEvent" and e.get("key") == "stats" else None
        metrics = (value or {}).get("usage_to_metrics") or {} if isinstance(value, dict) else {}
        if name := (metrics.get("default") or next(iter(metrics.values()), {}) or {}).get("model_name"):
            return str(name)
    return "unknown"


def convert(events: list[dict], sample, batch, model: str | None = None) -> list[dict]:
    runs = [
        m
        for m in (v1_conversation(c) for c in contexts(events, batch.notes))
        if any(x["role"] == "assistant" for x in m)
    ]
    if not runs:
        raise _common.Malformed("the event log holds no action or message of the agent")
    folder = sample.path.name in ("events.jsonl", openhands_event_file.STATE_FILE)
    run = sample.path.parent.name if folder else sample.path.name.split(".")[0]
    users = (e for e in events if e.get("kind") == "MessageEvent" and e.get("source") == "user")
    request = next((t for e in users if (t := v1_text(e.get("llm_message")))), "")  # not an observation's text
    task = {"task_id": _common.task_id_of("openhands", request), "category": "openhands", "request": request}
    return _common.context_runs(run, task, model or model_of(events), runs, sample, batch)


def _event_files(batch) -> dict:
    """The batch's event files by their `events/` folder, each folder's in the order of their indexes."""
    found = defaultdict(list)
    for event in batch.auxiliary(openhands_event_file.NAME):
        found[event.path.parent].append(event)
    return {folder: sorted(files, key=openhands_event_file.index) for folder, files in found.items()}


def persisted_events(sample, batch) -> list[dict]:
    """The event files of a `base_state.json`'s conversation folder, in the order of their indexes."""
    files = batch.once(openhands_event_file.NAME, lambda: _event_files(batch)).get(sample.path.parent / "events", [])
    if broken := next((s for s in files if not isinstance(s.document, dict)), None):
        raise _common.Malformed(f"its event file {broken.path.name} is not a JSON object")
    return [s.document for s in files]


def records(sample, batch):
    if sample.is_lines:
        yield from _common.session_records(
            sample, "bad_openhands_events_record", lambda lines: convert(lines, sample, batch)
        )
        return

    def build():
        llm = sample.document["agent"].get("llm") or {}
        return convert(persisted_events(sample, batch), sample, batch, llm.get("model"))

    yield from _common.record_lines(1, build, sample.head, "bad_openhands_events_record")
