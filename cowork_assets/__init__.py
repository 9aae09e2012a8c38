"""cowork-curate: raw teacher trajectories -> curated SFT and RL datasets, as Dagster assets."""

import gc
import os

# The steps create millions of short-lived Python objects (parsed records, rows crossing from polars),
# and collections every 700 allocations spent about a third of the Python time re-scanning the ones
# still alive. A larger first generation keeps the collector's work proportional to real garbage.
gc.set_threshold(10_000, 10, 10)

# Polars' allocator keeps freed pages for 5 s instead of polars' 0.5 s: a batch allocates and frees
# gigabytes, and faulting them back in cost ~1 s per 20,000-run batch and ~0.7 s in the cross-batch job,
# for a few hundred MB more resident memory per process. Set here, before polars is imported: polars
# reads the variable then and writes its own default into the environment, which processes started
# later (the batch workers) inherit. A value the user set wins (polars appends it to its own).
JEMALLOC_CONF = "dirty_decay_ms:5000,muzzy_decay_ms:5000"
os.environ.setdefault("_RJEM_MALLOC_CONF", JEMALLOC_CONF)
