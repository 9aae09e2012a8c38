"""cowork-curate: raw teacher trajectories -> curated SFT and RL datasets, as Dagster assets."""

import gc

# The steps create millions of short-lived Python objects (parsed records, rows crossing from polars),
# and collections every 700 allocations spent about a third of the Python time re-scanning the ones
# still alive. A larger first generation keeps the collector's work proportional to real garbage.
gc.set_threshold(10_000, 10, 10)
