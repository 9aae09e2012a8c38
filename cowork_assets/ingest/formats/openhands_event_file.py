"""OpenHands V1 events as the SDK persists a conversation, one file an event (`events/event-<index>-<event id>.json`
beside the conversation's `base_state.json`): read with that state (`openhands_events`), no records of their own."""

from __future__ import annotations

import re

from cowork_assets.ingest import recount

NAME = "openhands_event_file"
PRIORITY = 10
AUXILIARY = True
RECORDS = recount.NONE
EVENT_FILE = re.compile(r"^event-(\d+)-.+\.json$")  # persistence_const.py: an index of 5 digits or more
STATE_FILE = "base_state.json"


def index(sample) -> int:
    return int(EVENT_FILE.match(sample.path.name)[1])


def detect(sample) -> bool:
    """By its place: one that does not parse is still its conversation's (which is then quarantined whole)."""
    return (
        bool(EVENT_FILE.match(sample.path.name))
        and sample.path.parent.name == "events"
        and (sample.path.parent.parent / STATE_FILE).is_file()
    )


def records(sample, batch):
    return iter(())
