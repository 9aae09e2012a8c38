"""What a Dagster user expects to see on every asset, applied in one place: groups that read in pipeline
order, owners, tags, a code version per asset (so "unsynced" means the code it runs changed: its module and
what that imports of cowork_assets), freshness
of the published datasets against the refresh schedule, and links to the source."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import re
import subprocess
import warnings
from collections.abc import Callable, Iterator
from datetime import timedelta
from functools import cache
from pathlib import Path

import dagster as dg

import cowork_assets
from cowork_assets.orchestration.lineage import COLUMN_LINEAGE
from cowork_assets.orchestration.stages import BatchStage
from cowork_assets.runtime.code_versions import code_version
from cowork_assets.store.registry import published

# Pipeline order; the UI sorts groups by name, so each gets its position as a prefix.
GROUPS = ("raw", "staging", "evidence", "curation", "validation", "selection", "batches", "datasets", "warehouse")
PUBLISHED = (*published(), "dataset_card")
OWNERS = ["team:cowork-curate"]
REPO_ROOT = Path(__file__).resolve().parents[1]


def ordered(group: str) -> str:
    return f"{GROUPS.index(group) + 1}_{group}" if group in GROUPS else group


def _stage_values() -> Iterator[tuple[str, object]]:
    """(module name, value) of every stage's `assets.py`: its assets, specs and batch stages."""
    for info in pkgutil.iter_modules(cowork_assets.__path__):
        name = f"{cowork_assets.__name__}.{info.name}.assets"
        if not info.ispkg or importlib.util.find_spec(name) is None:
            continue
        values = list(vars(importlib.import_module(name)).values())
        made = [item for v in values if isinstance(v, list) for item in v]  # assets a stage makes in a loop
        for value in [*values, *made]:
            yield name, value


@cache
def defining_modules() -> dict[str, str]:
    """Asset key -> the module that defines it: a stage's `assets.py` (no stage's imports another's assets)."""
    found: dict[str, str] = {}
    for name, value in _stage_values():
        keys = (
            value.keys
            if isinstance(value, dg.AssetsDefinition | BatchStage)
            else [value.key]
            if isinstance(value, dg.AssetSpec)
            else []
        )
        for key in keys:
            found.setdefault(key.to_user_string(), name)
    return found


@cache
def stage_functions() -> dict[dg.AssetKey, Callable]:
    """Asset key -> the function of the batch stage that computes it: the source link of a table of the batch step."""
    return {key: value.compute for _, value in _stage_values() if isinstance(value, BatchStage) for key in value.keys}


def with_code_references(assets: dg.AssetsDefinition | dg.AssetSpec):
    """Source links: a batch step's tables to their stages' functions, any other asset to its own function."""
    stages = stage_functions()
    if not isinstance(assets, dg.AssetsDefinition) or not all(k in stages for k in assets.keys):
        return dg.with_source_code_references([assets])[0]

    def linked(s: dg.AssetSpec) -> dg.AssetSpec:
        compute = stages[s.key]
        where = dg.LocalFileCodeReference(
            file_path=inspect.getsourcefile(compute), line_number=inspect.getsourcelines(compute)[1]
        )
        return s.merge_attributes(
            metadata={"dagster/code_references": dg.CodeReferencesMetadataValue(code_references=[where])}
        )

    return assets.map_asset_specs(linked)


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
            code_version=code_version(defining_modules()[name]),
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
        referenced = [with_code_references(a) for a in dg.map_asset_specs(spec, assets)]
        if remote := git_remote(REPO_ROOT):  # links to the repository, not to files on the machine that loaded it
            url, commit = remote
            mapping = dg.AnchorBasedFilePathMapping(local_file_anchor=REPO_ROOT, file_anchor_path_in_repository="")
            referenced = dg.link_code_references_to_git(referenced, url, commit, mapping)
        return list(referenced)


def git_remote(root: Path) -> tuple[str, str] | None:
    """(web URL, commit) of the checkout's `origin` when it is on GitHub or GitLab, else None (a clone of a local
    folder, an installed wheel, no git)."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    if not (root / ".git").exists():
        return None
    url = git("config", "--get", "remote.origin.url")
    if found := re.fullmatch(r"git@(github\.com|gitlab\.com):(.+?)(?:\.git)?", url):
        url = f"https://{found[1]}/{found[2]}"
    url = url.removesuffix(".git")
    if not re.match(r"https://(github\.com|gitlab\.com)/", url) or not (commit := git("rev-parse", "HEAD")):
        return None
    return url, commit
