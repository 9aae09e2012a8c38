"""`make bench` works end to end on a tiny corpus (its figures are measured, not asserted: speed lives in
the benchmark, not in tests)."""

import orjson

from cowork_assets.bench import bench, report


def test_bench_writes_its_figures_and_the_growth_between_sizes(tmp_path):
    small = bench(60, 2, tmp_path)
    large = bench(120, 2, tmp_path)
    assert small["failed"] == {} == large["failed"] and "growth" not in small
    for figures in (small, large):
        floor = figures["floor"]
        assert floor["sft_messages"] > 0 and floor["seconds"] >= floor["read_seconds"] >= 0
        assert figures["wall_over_floor"] > 1 and figures["wall_over_strict_floor"] > 1
        assert {"staging_tables", "evidence", "curation", "sft_candidate"} <= set(figures["per_asset_seconds"])
        assert figures["peak_rss_mb"] > 0
        phases = figures["phase_seconds"]
        assert phases["batches"] > 0 and phases["cross_batch"] > 0 and phases["startup"] >= 0
        assert abs(sum(phases.values()) - figures["wall_seconds"]) < 0.5  # the phases account for the wall time
    assert large["growth"]["from_trajectories"] == 60
    assert orjson.loads((tmp_path / "bench-120.json").read_bytes()) == large
    assert "strict floor" in report(large) and "growth from 60 trajectories" in report(large)
    assert "s cross-batch" in report(large)
