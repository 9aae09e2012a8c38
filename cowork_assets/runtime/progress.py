"""Progress lines for long steps: the first once a step has run a few seconds, then at most one as often.

Each line is an event Dagster stores in its event log, each a write to the instance; a line per chunk
said little the next one did not, and a step done within seconds needs none (the step's own events say it ran).
"""

from __future__ import annotations

import time
from collections.abc import Callable

EVERY_SECONDS = 5.0


def throttled(log: Callable[[str], None], seconds: float = EVERY_SECONDS) -> Callable[[str], None]:
    """`log`, passing on at most one message every `seconds`, counted from now: work done within `seconds` logs
    nothing."""
    last = time.monotonic()

    def progress(message: str) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= seconds:
            last = now
            log(message)

    return progress
