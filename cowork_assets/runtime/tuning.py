"""Process tuning the entry points apply before they import polars (never done on import).

- The steps create millions of short-lived Python objects (parsed records, rows crossing from polars);
  collections every 700 allocations re-scan the ones still alive again and again. A larger first
  generation keeps the collector's work proportional to real garbage.
- Polars' allocator keeps freed pages for 5 s instead of polars' 0.5 s: a batch allocates and frees
  gigabytes, and faulting them back in costs page faults on every chunk. Polars reads the variable when
  it is imported and writes its own default into the environment, which processes started later (the
  batch workers) inherit. A value the user set wins (polars appends it to its own).
"""

from __future__ import annotations

import gc
import os

JEMALLOC_CONF = "dirty_decay_ms:5000,muzzy_decay_ms:5000"
GC_THRESHOLDS = (10_000, 10, 10)


def tune_process() -> None:
    """Set the collector thresholds and polars' allocator default; call before the first `import polars`."""
    gc.set_threshold(*GC_THRESHOLDS)
    os.environ.setdefault("_RJEM_MALLOC_CONF", JEMALLOC_CONF)
