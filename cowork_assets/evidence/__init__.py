"""Stage 2 — evidence: the values each trajectory's grader depends on, and where the agent first saw them."""
