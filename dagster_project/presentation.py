"""What a Dagster user expects to see on every asset, applied in one place: groups that read in pipeline
order, owners, tags, a code version per asset (so "unsynced" means its stage's code changed), freshness
of the published datasets against the refresh schedule, and links to the source."""

from __future__ import annotations

import hashlib
import warnings
from datetime import timedelta
from functools import cache
from pathlib import Path

import dagster as dg

from cowork_assets.orchestration.lineage import COLUMN_LINEAGE
from cowork_assets.store.registry import published

PACKAGE = Path(__file__).resolve().parents[1] / "cowork_assets"
# Pipeline order; the UI sorts groups by name, so each gets its position as a prefix.
GROUPS = ("raw", "staging", "evidence", "curation", "validation", "selection", "datasets", "warehouse")
# The code behind each group: its stage folder, plus what the stage's logic is built on.
STAGE_CODE = {
    "raw": ["ingest"],
    "staging": ["ingest"],
    "evidence": ["evidence", "checks"],
    "curation": ["curation"],
    "validation": ["validation", "checks"],
    "selection": ["selection"],
    "datasets": ["datasets", "checks"],
    "warehouse": ["warehouse"],
}
PUBLISHED = (*published(), "dataset_card")
OWNERS = ["team:cowork-curate"]


def ordered(group: str) -> str:
    return f"{GROUPS.index(group) + 1}_{group}" if group in GROUPS else group


@cache
def code_version(group: str) -> str:
    """A hash of the source of the stage folders behind a group."""
    digest = hashlib.sha256()
    for folder in STAGE_CODE.get(group, []):
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def with_sources(schema: dg.TableSchema, lineage: dict[str, list[tuple[str, str]]]) -> dg.TableSchema:
    """Each column's description ending with the upstream columns it is derived from: column lineage that
    reads without Dagster+."""
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                c.name,
                c.type,
                description=c.description
                + (
                    " — derived from " + ", ".join(f"{a}.{col}" for a, col in lineage[c.name])
                    if c.name in lineage
                    else ""
                ),
            )
            for c in schema.columns
        ]
    )


@cache
def freshness(refresh_cron: str) -> dg.FreshnessPolicy:
    """Fresh when materialized within a day before each refresh tick, or within the cron's own interval
    when it is shorter (Dagster refuses a window longer than the smallest interval)."""
    for window in (timedelta(days=1), timedelta(hours=1), timedelta(minutes=5), timedelta(minutes=1)):
        try:
            return dg.FreshnessPolicy.cron(deadline_cron=refresh_cron, lower_bound_delta=window)
        except Exception:  # noqa: BLE001 - Dagster's invariant error for a window longer than the interval
            continue
    raise ValueError(f"no freshness window fits refresh_cron {refresh_cron!r}")


def present(assets: list, refresh_cron: str, per_batch: set[str]) -> list:
    """The assets with groups in pipeline order, owners, tags, code versions, freshness and source links."""

    def spec(s: dg.AssetSpec) -> dg.AssetSpec:
        name, group = s.key.to_user_string(), s.group_name
        schema = s.metadata.get("dagster/column_schema")
        if schema is not None and name in COLUMN_LINEAGE:
            s = s.merge_attributes(metadata={"dagster/column_schema": with_sources(schema, COLUMN_LINEAGE[name])})
        s = s.replace_attributes(
            group_name=ordered(group),
            code_version=code_version(group),
            freshness_policy=freshness(refresh_cron) if name in PUBLISHED else None,
        )
        return s.merge_attributes(
            owners=OWNERS,
            tags={
                "stage": group,
                "scope": ("per-batch" if name in per_batch else "source" if group == "raw" else "cross-batch"),
            },
        )

    with warnings.catch_warnings():  # source links are a beta feature; say so once in the docs, not per asset
        warnings.simplefilter("ignore", dg.BetaWarning)
        return list(dg.with_source_code_references(dg.map_asset_specs(spec, assets)))
