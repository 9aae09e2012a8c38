"""The `cowork-curate` command line: the runner that drives Dagster headless, the summary it prints,
the benchmark. It sits beside `dagster_project`; the library (`cowork_assets`) imports neither."""
