"""Cluster duplicates within a task: exact (equal content hash) and near (Jaccard >= threshold).

LSH over MinHash signatures proposes candidate pairs (BANDS x ROWS: runs whose minhashes agree on
all ROWS of any band; with 16 x 4 a pair at Jaccard 0.9 becomes a candidate with probability
1 - 4e-8, at 0.95 1 - 2e-12, and a cluster needs only one of its pairs found); every candidate is
then verified with the exact Jaccard of the shingle sets, so the threshold is applied exactly. Exact
copies are collapsed before any pairing, and a run is paired with at most NEIGHBOURS others of a bucket.
No all-pairs comparison, and everything is sorted by trajectory id,
so the result does not depend on batch order.
"""

from __future__ import annotations

import polars as pl

from cowork_assets.selection.schemas import DedupClusters
from cowork_assets.selection.signatures import PERMUTATIONS
from cowork_assets.store.models import polars_schema

BANDS = 16
ROWS = PERMUTATIONS // BANDS
NEIGHBOURS = 64  # runs of a shared bucket each run is paired with: pairs linear in a task's runs, never N²
CLUSTER_SCHEMA = polars_schema(DedupClusters)


def compared(pairs: pl.DataFrame, sigs: pl.DataFrame) -> pl.DataFrame:
    """`pairs` (left, right) with `exact` (equal content hashes) and `similarity`, the Jaccard
    similarity of their shingle sets (each a sorted list of distinct hashes; two empty sets: 1.0)."""
    side = sigs.select("trajectory_id", "content_hash", "shingles")
    both = pairs.join(
        side.rename(lambda c: f"{c}_l"), left_on="left", right_on="trajectory_id_l", maintain_order="left"
    ).join(side.rename(lambda c: f"{c}_r"), left_on="right", right_on="trajectory_id_r", maintain_order="left")
    common = pl.col("shingles_l").list.set_intersection("shingles_r").list.len()
    union = pl.col("shingles_l").list.len() + pl.col("shingles_r").list.len() - common
    return both.select(
        pl.exclude("^(content_hash|shingles)_[lr]$"),
        exact=pl.col("content_hash_l") == pl.col("content_hash_r"),
        similarity=pl.when(union > 0).then(common / union).otherwise(1.0),
    )


def candidate_pairs(sigs: pl.DataFrame) -> pl.DataFrame:
    """Pairs (left < right) sharing a task and all ROWS minhashes of some band, or an exact content hash."""
    sigs = sigs.sort("trajectory_id")
    runs = sigs.select(  # runs as integers, in trajectory id order, so the joins below are cheap
        "content_hash",
        task=pl.col("task_id").rank("dense"),
        run=pl.int_range(pl.len(), dtype=pl.UInt32),
        bucket=pl.col("minhash").list.to_array(PERMUTATIONS).reshape((-1, BANDS, ROWS)).arr.to_list(),
    )
    # A band's ROWS minhashes joined on as one hash (a collision only proposes a pair the exact check
    # rejects), and only buckets that two runs share: nearly all hold one run, and joined each met itself.
    key = ["task", "band", "bucket"]
    banded = (
        runs.select("task", "run", "bucket", band=pl.int_ranges(BANDS, dtype=pl.UInt8))
        .explode("bucket", "band")
        .with_columns(pl.col("bucket").hash())
        .filter(pl.len().over(key) > 1)
        .with_columns(pos=pl.int_range(pl.len(), dtype=pl.UInt32).over(key))  # in run (trajectory id) order
    )
    # Each run meets the next NEIGHBOURS runs of its bucket: every pair of a bucket of up to NEIGHBOURS + 1 runs,
    # and for N near copies of one run N x NEIGHBOURS pairs instead of N², joined into one cluster by the chain.
    last = pl.min_horizontal(pl.col("pos") + NEIGHBOURS, pl.len().over(key) - 1)
    later = banded.select(*key, "run", pos=pl.int_ranges(pl.col("pos") + 1, last + 1, dtype=pl.UInt32)).explode("pos")
    same = (
        pl.concat(
            [
                later.join(banded.select(*key, "pos", run_r="run"), on=[*key, "pos"]).select("run", "run_r"),
                runs.join(runs, on=["task", "content_hash"], suffix="_r").select("run", "run_r"),
            ]
        )
        .filter(pl.col("run") < pl.col("run_r"))
        .unique()
    )
    ids = sigs.select("task_id", "trajectory_id").with_row_index("run")
    return (
        same.join(ids, on="run")
        .join(ids.select(run_r="run", right="trajectory_id"), on="run_r")
        .select("task_id", left="trajectory_id", right="right")
        .sort("task_id", "left", "right")
    )


def clusters(sigs: pl.DataFrame, near_dup_threshold: float) -> pl.DataFrame:
    """One row per member of every duplicate cluster (clusters of one are not listed).

    `sigs`: trajectory_id, batch, task_id, content_hash, shingles, score, chars. The representative kept
    is the best member: highest score, then fewest characters, then smallest trajectory id.
    """
    # Exact copies are collapsed first: each joins the first run of its task with its content (its exemplar), and
    # only exemplars are paired, so N copies of one run cost N edges, not N² pairs. A copy has its exemplar's
    # shingles, so it is near whatever its exemplar is near: the clusters are the same.
    sigs = sigs.sort("trajectory_id").with_columns(
        exemplar=pl.col("trajectory_id").first().over("task_id", "content_hash")
    )
    distinct = sigs.filter(pl.col("trajectory_id") == pl.col("exemplar"))
    near = compared(candidate_pairs(distinct), distinct).filter(pl.col("similarity") >= near_dup_threshold)
    copies = sigs.filter(pl.col("trajectory_id") != pl.col("exemplar")).select(left="exemplar", right="trajectory_id")
    edges = pl.concat([near.select("left", "right"), copies])
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.get(x, x) != x:
            x = parent[x] = parent.get(parent[x], parent[x])
        return x

    for left, right in edges.select("left", "right").iter_rows():
        a, b = sorted((root(left), root(right)))
        parent[b] = a
    if not parent:
        return pl.DataFrame(schema=CLUSTER_SCHEMA)
    members = sigs.filter(pl.col("trajectory_id").is_in(list({*parent, *parent.values()}))).with_columns(
        cluster_id=pl.col("trajectory_id").map_elements(root, return_dtype=pl.String)
    )
    best = (
        members.sort(["score", "chars", "trajectory_id"], descending=[True, False, False], nulls_last=True)
        .group_by("cluster_id", maintain_order=True)
        .agg(representative=pl.col("trajectory_id").first())
    )
    out = members.join(best, on="cluster_id").with_columns(kept=pl.col("trajectory_id") == pl.col("representative"))
    # Each member against its representative (Python's round(x, 4): halves to even).
    itself = pl.col("left") == pl.col("right")
    kinds = compared(out.select(left="trajectory_id", right="representative"), sigs).select(
        kind=pl.when(itself)
        .then(pl.lit("representative"))
        .when("exact")
        .then(pl.lit("exact"))
        .otherwise(pl.lit("near")),
        similarity=pl.when(itself | pl.col("exact"))
        .then(1.0)
        .otherwise(pl.col("similarity").round(4, mode="half_to_even")),
    )
    return pl.concat([out, kinds], how="horizontal").select(list(CLUSTER_SCHEMA)).sort("cluster_id", "trajectory_id")
