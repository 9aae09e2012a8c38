"""Table I/O, no Dagster: the registry of every table (its files, how to scan, read and write them), local or
object-store paths and atomic writes, the Arrow and polars schemas of the pandera models, project files."""
