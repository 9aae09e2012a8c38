"""Column lineage is declared for real columns of real upstream assets, and reaches the UI's metadata."""

import dagster as dg
import pytest

from cowork_assets.orchestration.lineage import COLUMN_LINEAGE
from cowork_assets.store.models import polars_schema
from cowork_assets.store.registry import TABLES
from dagster_project.definitions import defs


def _columns(asset: str) -> set[str]:
    return set(polars_schema(TABLES[asset].model).names())


@pytest.mark.parametrize("asset", sorted(COLUMN_LINEAGE))
def test_lineage_names_existing_columns_of_upstream_assets(asset):
    graph = defs.resolve_asset_graph()
    upstream = dg.AssetSelection.assets(asset).upstream().resolve(graph) - {dg.AssetKey(asset)}
    assert set(COLUMN_LINEAGE[asset]) <= _columns(asset)
    for column, deps in COLUMN_LINEAGE[asset].items():
        assert deps, column
        for source, source_column in deps:
            assert dg.AssetKey(source) in upstream, (asset, source)
            assert source_column in _columns(source), (asset, column, source, source_column)


def test_materializations_carry_the_column_lineage(pipeline):
    _, instance, _ = pipeline
    event = instance.get_latest_materialization_event(dg.AssetKey("sft_dataset"))
    lineage = event.asset_materialization.metadata["dagster/column_lineage"]
    deps = lineage.value.deps_by_column["sample_id"]
    assert [(d.asset_key, d.column_name) for d in deps] == [(dg.AssetKey("sft_candidate"), "sample_id")]
    candidate = instance.get_latest_materialization_event(dg.AssetKey("sft_candidate")).asset_materialization
    deps = candidate.metadata["dagster/column_lineage"].value.deps_by_column["tools"]
    assert [(d.asset_key, d.column_name) for d in deps] == [(dg.AssetKey("task_packages"), "tools")]
    curated = instance.fetch_materializations(dg.AssetKey("curated_messages"), limit=1).records[0]
    assert "content" in curated.asset_materialization.metadata["dagster/column_lineage"].value.deps_by_column
