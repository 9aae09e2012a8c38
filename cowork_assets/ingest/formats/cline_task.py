"""The files Cline and Roo Code keep beside a task's conversation (`ui_messages.json`, `task_metadata.json`,
`context_history.json`, ...): the extension's own record of the task, read with the conversation they describe
(`cline`: the model, and the ranges of the history Cline's truncations hid), no records of their own."""

from __future__ import annotations

from cowork_assets.ingest import recount
from cowork_assets.ingest.formats.cline import HISTORY

NAME = "cline_task"
PRIORITY = 10
AUXILIARY = True
RECORDS = recount.NONE
FILES = frozenset({"ui_messages.json", "task_metadata.json", "context_history.json", "history_item.json"})


def detect(sample) -> bool:
    return sample.path.name in FILES and (sample.path.parent / HISTORY).is_file()


def records(sample, batch):
    return iter(())
