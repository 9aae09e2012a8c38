"""Progress lines for long steps, at most one every few seconds.

Each line is an event Dagster stores in its event log, each a write to the instance; a line per chunk
said little the next one did not.
"""

from __future__ import annotations

import time
from collections.abc import Callable

EVERY_SECONDS = 5.0


def throttled(log: Callable[[str], None], seconds: float = EVERY_SECONDS) -> Callable[[str], None]:
    """`log`, passing on at most one message every `seconds`; the first always goes through."""
    last = -float("inf")

    def progress(message: str) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= seconds:
            last = now
            log(message)

    return progress
