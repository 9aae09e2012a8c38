"""`make bench`'s harness: the whole pipeline measured on a synthetic corpus (`harness.py`), what Dagster alone costs
for the same jobs (`framework_floor.py`) and the naive reference (`naive_reference.py`). Not part of the installed
package: run it from the repository, `.venv/bin/python -m bench.harness --size N`."""
