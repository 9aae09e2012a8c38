"""Evidence of one chunk of trajectories: extract the items, locate them, give each a status."""

from __future__ import annotations

from collections import Counter

import polars as pl

from cowork_assets.evidence.extract import extract_items
from cowork_assets.evidence.locate import STATUS, locate
from cowork_assets.evidence.schemas import Evidence
from cowork_assets.schema import polars_schema


def build_evidence(
    batch: str, trajectories: pl.DataFrame, packages: pl.DataFrame, tool_calls: pl.DataFrame, messages: pl.DataFrame
) -> tuple[pl.DataFrame, Counter]:
    items, unknown = extract_items(trajectories, packages, tool_calls)
    located = locate(items, messages)
    frame = (
        items.join(located, on=["trajectory_id", "norm"], how="left", maintain_order="left")
        .with_columns(batch=pl.lit(batch), status=STATUS)
        .select(polars_schema(Evidence).names())
    )
    return frame, unknown
