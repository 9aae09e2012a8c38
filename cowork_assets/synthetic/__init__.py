"""Deterministic synthetic teacher trajectories (`cowork-curate generate`), with ground-truth labels."""
