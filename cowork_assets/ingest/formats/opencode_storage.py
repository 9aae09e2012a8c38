"""OpenCode's stored messages (`message/<session id>/msg_….json`) and parts (`part/<message id>/prt_….json`): read
with the session they belong to (`opencode`), no records of their own."""

from __future__ import annotations

from cowork_assets.ingest import recount

NAME = "opencode_storage"
PRIORITY = 10
AUXILIARY = True
RECORDS = recount.NONE


def detect(sample) -> bool:
    doc = sample.document
    if not isinstance(doc, dict):
        return False
    ident = str(doc.get("id", ""))
    return (ident.startswith("msg_") and "sessionID" in doc and "role" in doc) or (
        ident.startswith("prt_") and "messageID" in doc and "type" in doc
    )


def records(sample, batch):
    return iter(())
