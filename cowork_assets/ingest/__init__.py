"""Stage 1 — ingest: raw batch folders -> staging Parquet tables (trajectories, messages, ...)."""
