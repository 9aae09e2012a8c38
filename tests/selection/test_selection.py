"""Deduplication (exact and near, within a task, deterministic) and the exclusions table."""

import polars as pl
import pytest

from cowork_assets.selection.dedup import candidate_pairs, clusters, compared
from cowork_assets.selection.exclusions import exclusions_by_bucket, find_exclusions
from cowork_assets.selection.signatures import signatures
from cowork_assets.store.buckets import BUCKETS, task_buckets
from cowork_assets.store.registry import TABLES
from tests.helpers import flatten, trajectory

WORDS = [f"w{i:03d}" for i in range(202)]  # 202 distinct words -> 200 distinct word 3-grams


def _traj(tid: str, words: list[str], task: str = "task-1") -> dict:
    t = trajectory([{"role": "user", "content": "go"}, {"role": "assistant", "content": " ".join(words)}], tid=tid)
    t["task"]["task_id"] = task
    return t


def _sigs(*trajs, scores=None) -> pl.DataFrame:
    f = flatten(*trajs)
    info = (
        f["trajectories"]
        .select("trajectory_id", "batch", "task_id", chars="chars_total")
        .with_columns(score=pl.Series(scores or [1.0] * len(trajs), dtype=pl.Float64))
    )
    return signatures(f["messages"]).join(info, on="trajectory_id")


@pytest.mark.parametrize(
    "extra, expected_j, clustered",
    [
        (22, 200 / 222, True),  # 0.9009: just above 0.9
        (23, 200 / 223, False),  # 0.8969: just below
    ],
)
def test_near_duplicates_just_above_and_below_the_threshold(extra, expected_j, clustered):
    sigs = _sigs(_traj("a", WORDS), _traj("b", WORDS + [f"x{i}" for i in range(extra)]))
    assert compared(pl.DataFrame({"left": ["a"], "right": ["b"]}), sigs)["similarity"].item() == pytest.approx(
        expected_j
    )
    found = clusters(sigs, 0.9)
    assert (found.height == 2) is clustered
    if clustered:
        assert found.select("trajectory_id", "kind", "kept").rows() == [
            ("a", "representative", True),
            ("b", "near", False),
        ]
        assert found["similarity"][1] == round(expected_j, 4)


def test_exact_duplicates_cluster_and_the_best_is_kept():
    sigs = _sigs(_traj("a", WORDS), _traj("b", WORDS), _traj("c", WORDS[:50]), scores=[0.5, 1.0, 1.0])
    found = clusters(sigs, 0.9)
    assert found.select("trajectory_id", "kind", "similarity", "representative", "kept").rows() == [
        ("a", "exact", 1.0, "b", False),
        ("b", "representative", 1.0, "b", True),
    ]


def test_many_copies_of_one_run_cost_one_edge_each_not_a_pair_each(monkeypatch):
    """1,500 copies of one run and a near copy: one cluster of all of them, and no step pairs more runs than there
    are (all pairs of the copies would be 1.1 million)."""
    import cowork_assets.selection.dedup as dedup

    near = _traj("near", WORDS + ["x1"])
    many = [_traj(f"r{i:04d}", WORDS) for i in range(1500)]
    sigs = _sigs(near, *many, scores=[2.0] + [1.0] * 1500)
    sizes = []
    pairs, compare = dedup.candidate_pairs, dedup.compared
    monkeypatch.setattr(dedup, "candidate_pairs", lambda s: sizes.append(len(out := pairs(s))) or out)
    monkeypatch.setattr(dedup, "compared", lambda p, s: sizes.append(len(p)) or compare(p, s))
    found = clusters(sigs, 0.9)
    assert found.height == 1501 and found["cluster_id"].unique().to_list() == ["near"]
    assert found.filter("kept")["trajectory_id"].to_list() == ["near"]  # the best score
    assert found["kind"].value_counts().sort("kind").rows() == [("near", 1500), ("representative", 1)]
    assert max(sizes) <= 1501


def test_many_near_copies_of_one_run_pair_each_run_with_a_bounded_number_of_others(monkeypatch):
    """Distinct near copies of one task's run share their LSH buckets: each run is paired with at most NEIGHBOURS
    others of a bucket, so twice the copies make twice the pairs, not four times (all pairs of 3,000 would be 4.5
    million), and the clusters are those of pairing every run of a bucket with every other."""
    import cowork_assets.selection.dedup as dedup

    copies = [_traj(f"r{i:04d}", WORDS + [f"x{i}"]) for i in range(3000)]
    sizes = []
    compare = dedup.compared
    monkeypatch.setattr(dedup, "compared", lambda p, s: sizes.append(len(p)) or compare(p, s))
    few = _sigs(*copies[:300])
    found = clusters(few, 0.9)
    with monkeypatch.context() as every_pair:
        every_pair.setattr(dedup, "NEIGHBOURS", 300)
        assert clusters(few, 0.9).equals(found) and found.height > 290
    assert sizes[2] > sizes[0]  # pairing every run of a bucket proposes more pairs, and finds nothing more
    sizes.clear()
    for n in (1500, 3000):
        clusters(_sigs(*copies[:n]), 0.9)
    bounded = sizes[0::2]  # the candidate pairs of each run (then each member against its representative)
    assert bounded[0] < 1500 * 2 * dedup.NEIGHBOURS and 1.8 < bounded[1] / bounded[0] < 2.2
    # A bucket within the bound is paired in full: 60 runs, every one of their 1,770 pairs.
    assert candidate_pairs(few.head(60)).height == 60 * 59 // 2


def test_duplicates_are_only_sought_within_a_task():
    sigs = _sigs(_traj("a", WORDS, "t1"), _traj("b", WORDS, "t2"))
    assert candidate_pairs(sigs).is_empty() and clusters(sigs, 0.9).is_empty()


def test_clusters_do_not_depend_on_input_order():
    trajs = [_traj(f"t{i}", WORDS[i % 3 :] + WORDS[: i % 3], task=f"task-{i % 2}") for i in range(8)]
    sigs = _sigs(*trajs)
    a = clusters(sigs, 0.9)
    b = clusters(sigs.reverse(), 0.9)
    c = clusters(sigs.sample(fraction=1.0, shuffle=True, seed=3), 0.9)
    assert a.height > 0 and a.equals(b) and a.equals(c)


def test_dedup_clusters_match_the_generator_labels_exactly(pipeline, labels):
    settings, _, _ = pipeline
    found = TABLES["dedup_clusters"].read(settings.root)
    dropped = found.filter(~pl.col("kept"))
    expected = sorted(
        (l["trajectory_id"], l["duplicate_of"], l["kind"].split("_")[0])
        for l in labels
        if l["kind"] in ("exact_duplicate", "near_duplicate")
    )
    assert sorted(dropped.select("trajectory_id", "representative", "kind").rows()) == expected
    assert found.filter(pl.col("kept")).height == len(expected)  # every cluster is a labelled pair
    assert (dropped.filter(pl.col("kind") == "near")["similarity"] >= 0.9).all()


def test_signatures_are_deterministic_across_runs(pipeline, tmp_path):
    settings, _, _ = pipeline
    sigs = TABLES["dedup_signatures"].scan(settings.root).collect().sort("trajectory_id")
    messages = (
        TABLES["curated_messages"]
        .scan(settings.root)
        .collect()
        .filter(pl.col("trajectory_id").is_in(sigs["trajectory_id"].to_list()))
    )
    again = signatures(messages.sample(fraction=1.0, shuffle=True, seed=1)).sort("trajectory_id")
    assert again.select("trajectory_id", "content_hash", "shingles", "minhash").equals(
        sigs.select("trajectory_id", "content_hash", "shingles", "minhash")
    )


def _frames(n_runs=4):
    t = pl.DataFrame(
        {
            "batch": "b",
            "trajectory_id": [f"r{i}" for i in range(n_runs)],
            "task_id": "task",
            "teacher_role": "teacher",
            "grade_passed": True,
            "grade_score": [1.0, 1.0, 0.9, 1.0][:n_runs],
        }
    )
    empty = lambda schema: pl.DataFrame(schema=schema)  # noqa: E731
    return dict(
        trajectories=t,
        structure=empty(
            {
                "batch": pl.String,
                "trajectory_id": pl.String,
                "kind": pl.String,
                "severity": pl.String,
                "detail": pl.String,
            }
        ),
        task_findings=empty(
            {
                "task_id": pl.String,
                "trajectory_id": pl.String,
                "batch": pl.String,
                "kind": pl.String,
                "severity": pl.String,
                "detail": pl.String,
            }
        ),
        rollup=pl.DataFrame(
            {
                "batch": "b",
                "trajectory_id": t["trajectory_id"],
                "lost_to_truncation": [0] * n_runs,
                "redacted_evidence": [0] * n_runs,
            }
        ),
        stats=pl.DataFrame(
            {
                "batch": "b",
                "trajectory_id": t["trajectory_id"],
                "verdict": "kept",
                "reason": None,
                "chars_after": [300, 100, 50, 200][:n_runs],
            }
        ),
        clusters=empty(
            {
                "batch": pl.String,
                "trajectory_id": pl.String,
                "kind": pl.String,
                "representative": pl.String,
                "similarity": pl.Float64,
                "kept": pl.Boolean,
            }
        ),
    )


def test_the_per_task_cap_keeps_the_best():
    found = find_exclusions(**_frames(), max_per_task=2, lost_evidence_policy="drop")
    # r1 (score 1, 100 chars) and r3 (score 1, 200 chars) are best; r0 (300 chars) and r2 (score 0.9) are capped
    assert found.select("dataset", "trajectory_id", "criterion").rows() == [("sft", "r0", "cap"), ("sft", "r2", "cap")]


def test_every_reason_is_recorded_and_lost_evidence_can_be_kept_and_flagged():
    f = _frames()
    f["rollup"] = f["rollup"].with_columns(
        lost_to_truncation=pl.Series([1, 0, 0, 0]), redacted_evidence=pl.Series([0, 0, 0, 1])
    )
    f["stats"] = f["stats"].with_columns(
        verdict=pl.Series(["kept", "dropped", "kept", "kept"]),
        reason=pl.Series([None, "over budget: 50000 chars", None, None]),
    )
    f["task_findings"] = pl.DataFrame(
        {
            "task_id": ["task"],
            "trajectory_id": ["r2"],
            "batch": ["b"],
            "kind": ["call_counting_grader"],
            "severity": ["error"],
            "detail": ["grade counts calls"],
        }
    )
    found = find_exclusions(**f, max_per_task=4, lost_evidence_policy="drop")
    assert found.select("dataset", "trajectory_id", "criterion", "reason").rows() == [
        ("sft", "r0", "evidence", "lost evidence to truncation"),
        ("sft", "r1", "budget", "over budget"),
        ("sft", "r2", "task_consistency", "call_counting_grader"),
        ("sft", "r3", "evidence", "evidence redacted as a secret"),
        ("rl_tasks", None, "task_consistency", "call_counting_grader"),
    ]
    flagged = find_exclusions(**f, max_per_task=4, lost_evidence_policy="flag")
    assert {"r0", "r3"}.isdisjoint(flagged["trajectory_id"].to_list())


def test_a_trajectory_id_repeated_in_another_batch_is_kept_once():
    f = _frames(2)
    f["trajectories"] = pl.concat([f["trajectories"], f["trajectories"].head(1).with_columns(batch=pl.lit("a"))])
    found = find_exclusions(**f, max_per_task=4, lost_evidence_policy="drop")
    assert found.select("batch", "trajectory_id", "criterion", "reason", "detail").rows() == [
        ("b", "r0", "dedup", "duplicate trajectory id", "the same id is in batch a (kept there)")
    ]


@pytest.mark.parametrize("max_runs", [1, 4, None])  # each bucket alone; "0" alone, then "1"-"f"; all together
def test_exclusions_a_task_bucket_at_a_time_are_the_whole_corpus_s(max_runs):
    """Three tasks in three buckets (task: 0, task-a: 3, task-b: b), each rule at work, and r4 in two batches under
    tasks of two buckets: the buckets' rows together are exactly the whole corpus's, however they are grouped."""
    f = _frames()
    runs = pl.DataFrame(
        {
            "batch": ["b", "b", "b", "a"],
            "trajectory_id": ["r4", "r5", "r6", "r4"],
            "task_id": ["task-a", "task-a", "task-b", "task-b"],
            "teacher_role": "teacher",
            "grade_passed": [True, True, True, False],
            "grade_score": [1.0, 1.0, 1.0, 0.0],
        }
    )
    f["trajectories"] = pl.concat([f["trajectories"], runs])
    every = f["trajectories"].select("batch", "trajectory_id")
    f["rollup"] = every.with_columns(lost_to_truncation=0, redacted_evidence=0)
    f["stats"] = every.with_columns(verdict=pl.lit("kept"), reason=pl.lit(None, pl.String), chars_after=100)
    f["task_findings"] = pl.DataFrame(
        {
            "task_id": ["task-a"],
            "trajectory_id": [None],
            "batch": [None],
            "kind": ["unknown_tool"],
            "severity": ["error"],
            "detail": ["calls a tool the interface lacks"],
        },
        schema=f["task_findings"].schema,
    )
    f["clusters"] = pl.DataFrame(
        {"batch": "b", "trajectory_id": ["r1"], "task_id": "task", "kind": "exact", "representative": "r3"}
    ).with_columns(similarity=1.0, kept=False)
    held = pl.DataFrame({"task_id": ["task-b"], "benchmark": "b", "reason": "listed", "detail": "in a test split"})
    secrets = pl.DataFrame({"task_id": ["task"], "kinds": ["api key"]})
    policy = {"max_per_task": 2, "lost_evidence_policy": "drop", "held": held, "secret_checks": secrets}
    whole = find_exclusions(**f, **policy)
    clusters = f.pop("clusters")
    of_buckets = lambda bs: clusters.filter(task_buckets(clusters["task_id"]).is_in(bs))  # noqa: E731
    parts = dict(exclusions_by_bucket(BUCKETS, of_buckets, **f, **policy, max_runs=max_runs))
    assert list(parts) == list(BUCKETS)
    assert {b for b, rows in parts.items() if rows.height} == {"0", "3", "b"}
    together = pl.concat(parts.values())
    assert sorted(together.rows(), key=str) == sorted(whole.rows(), key=str) and together.height == whole.height == 13
    assert ("b", "r4", "duplicate trajectory id") in parts["3"].select("batch", "trajectory_id", "reason").rows()


def test_every_teacher_run_not_selected_is_explained(pipeline):
    settings, _, _ = pipeline
    found = TABLES["exclusions"].read(settings.root).filter(pl.col("dataset") == "sft")
    t = TABLES["trajectories"].scan(settings.root).collect()
    assert set(found.filter(pl.col("criterion") == "role")["trajectory_id"]) == set(
        t.filter(pl.col("teacher_role") == "student")["trajectory_id"]
    )
    assert set(found.filter(pl.col("criterion") == "grade")["trajectory_id"]) == set(
        t.filter(pl.col("teacher_role") == "teacher", ~pl.col("grade_passed"))["trajectory_id"]
    )
    selected = t.join(found, on="trajectory_id", how="anti")
    assert selected.height > 100 and selected.group_by("task_id").len()["len"].max() <= settings.max_per_task


def test_why_excluded_answers_for_any_trajectory(pipeline, labels, capsys):
    from cowork_cli.cli import main

    settings, _, _ = pipeline
    copy = next(l for l in labels if l["kind"] == "exact_duplicate")
    assert (
        main(
            [
                "sql",
                "--db",
                str(settings.warehouse_path),
                "--query",
                "why_excluded",
                "--param",
                f"trajectory_id={copy['trajectory_id']}",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"of {copy['duplicate_of']} (Jaccard 1.0)" in out and copy["raw_file"] in out


def test_similarity_is_the_jaccard_of_the_shingle_sets_and_two_empty_sets_are_alike():
    sigs = pl.DataFrame(
        {
            "trajectory_id": ["a", "b", "c", "d"],
            "content_hash": ["1", "2", "3", "3"],
            "shingles": [[1, 2, 3], [2, 3, 4, 5], [], []],
        },
        schema_overrides={"shingles": pl.List(pl.UInt32)},
    )
    out = compared(pl.DataFrame({"left": ["a", "a", "c"], "right": ["b", "c", "d"]}), sigs)
    assert out.rows() == [("a", "b", False, 2 / 5), ("a", "c", False, 0.0), ("c", "d", True, 1.0)]


def test_dedup_clusters_reads_a_repeated_id_from_its_first_batch_only(tmp_path):
    import dagster as dg

    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_assets.selection.assets import dedup_clusters

    same, other = WORDS[:100], WORDS[100:]
    # batch a: r1 repeats r0; batch b (later): r1 again, now repeating r2. Only a's r1 may be clustered.
    batches = {"a": _sigs(_traj("r0", same), _traj("r1", same)), "b": _sigs(_traj("r1", other), _traj("r2", other))}
    for batch, sigs in batches.items():
        rows = sigs.with_columns(batch=pl.lit(batch))
        TABLES["dedup_signatures"].write(rows, tmp_path, batch)
    settings = CurateSettings(raw_root=str(tmp_path / "raw"), data_root=str(tmp_path))
    dedup_clusters(dg.build_asset_context(partition_key_range=dg.PartitionKeyRange(BUCKETS[0], BUCKETS[-1])), settings)
    found = TABLES["dedup_clusters"].read(tmp_path)
    assert found.select("trajectory_id", "batch", "kind").sort("trajectory_id").rows() == [
        ("r0", "a", "representative"),
        ("r1", "a", "exact"),
    ]
