"""Stage 3 — curation: truncate observations, apply the sample budget, and audit what evidence survived."""
