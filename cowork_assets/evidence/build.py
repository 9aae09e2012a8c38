"""Evidence of one chunk of trajectories: extract the items, locate them, give each a status."""

from __future__ import annotations

from collections import Counter

import polars as pl

from cowork_assets.evidence.edits import edit_items, locate_edits
from cowork_assets.evidence.extract import ITEM_SCHEMA, extract_items
from cowork_assets.evidence.locate import STATUS, locate
from cowork_assets.evidence.schemas import Evidence
from cowork_assets.store.models import polars_schema


def build_evidence(
    batch: str, trajectories: pl.DataFrame, packages: pl.DataFrame, tool_calls: pl.DataFrame, messages: pl.DataFrame
) -> tuple[pl.DataFrame, Counter]:
    items, unknown = extract_items(trajectories, packages, tool_calls)
    keys = ["trajectory_id", "norm"]
    edits = edit_items(tool_calls).join(items.select(keys).unique(), on=keys, how="anti", maintain_order="left")
    located = pl.concat([locate(items, messages), locate_edits(edits, messages)])
    items = pl.concat([items, edits.select(list(ITEM_SCHEMA))])
    frame = (
        items.join(located, on=["trajectory_id", "norm"], how="left", maintain_order="left")
        .with_columns(batch=pl.lit(batch), status=STATUS)
        .select(polars_schema(Evidence).names())
    )
    return frame, unknown
