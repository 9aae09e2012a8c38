"""cowork-curate: raw teacher trajectories -> curated SFT and RL datasets, as Dagster assets.

Importing the library changes nothing in the process; the entry points (`cowork-curate`, the Dagster code
location) call `cowork_assets.runtime.tuning.tune_process` first.
"""
