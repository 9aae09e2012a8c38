"""The process runtime, no Dagster: helper processes, /proc, allocator and collector tuning, a run's scratch
folder, throttled progress lines."""
