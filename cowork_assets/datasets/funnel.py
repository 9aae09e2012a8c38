"""What a dataset card reports about the pipeline: the funnel from raw records to published rows, the
reasons for every removal, and how much at-risk evidence each truncation strategy kept."""

from __future__ import annotations

import polars as pl

from cowork_assets.curation.sweep import totals
from cowork_assets.datasets.schemas import PUBLISHED
from cowork_assets.holdouts import load, shipped
from cowork_assets.ingest.formats import coding_categories
from cowork_assets.selection.schemas import CRITERIA
from cowork_assets.settings import Settings
from cowork_assets.store.registry import TABLES
from cowork_assets.truncation.strategies import names


def _count(frame: pl.LazyFrame) -> int:
    return frame.select(pl.len()).collect().item()


def funnel(
    settings: Settings, dataset: str, published: int, held: pl.DataFrame, exclusions: pl.DataFrame | None
) -> list[tuple[str, int]]:
    """`exclusions`: the rows of the dataset's selection; None for a dataset not selected."""
    described = PUBLISHED[dataset]
    parsed = _count(TABLES["trajectories"].scan(settings.root))
    if exclusions is None:  # not selected (rollouts): exclusions may not even exist yet when it publishes
        runs = TABLES["trajectories"].scan(settings.root).select("task_id")
        kept = _count(runs.join(held.lazy().select("task_id"), on="task_id", how="anti"))
        return [("parsed trajectories", parsed), ("after holdout", kept), ("published rollouts", published)]
    if described.rows == "tasks":
        tasks = TABLES["task_packages"].scan(settings.root).select("task_id").unique().collect().height
        bad = exclusions["task_id"].n_unique()
        return [("task packages (distinct tasks)", tasks), ("consistent", tasks - bad), ("published", published)]
    steps = [("raw records", parsed + _count(TABLES["quarantine"].scan(settings.root))), ("parsed", parsed)]
    gone: set[str] = set()
    for criterion in CRITERIA:
        gone |= set(exclusions.filter(pl.col("criterion") == criterion)["trajectory_id"].to_list())
        steps.append((f"after {criterion}", parsed - len(gone)))
    return steps + [("published", published)]


def reasons(exclusions: pl.DataFrame) -> list[tuple]:
    return (
        exclusions.group_by("criterion", "reason")
        .agg(n=pl.coalesce("trajectory_id", "task_id").n_unique())
        .sort("n", "criterion", "reason", descending=[True, False, False])
        .rows()
    )


def retention(settings: Settings) -> dict:
    """At-risk evidence of passing teacher runs kept under the configured strategy and under each strategy."""
    passing = TABLES["evidence_rollup"].scan(settings.root).filter(pl.col("passing_teacher")).select("trajectory_id")
    audit = (
        TABLES["evidence_audit"]
        .scan(settings.root)
        .filter(pl.col("status") == "at_risk")
        .join(passing, on="trajectory_id")
        .select("lost_to_truncation", "lost_under")
        .collect()
    )
    n = audit.height
    kept = {f"configured ({settings.truncation_strategy})": n - int(audit["lost_to_truncation"].sum())}
    kept |= {name: n - int(audit["lost_under"].list.contains(name).sum()) for name in names()}
    return {label: {"retained": k, "at_risk": n, "share": k / n if n else 1.0} for label, k in kept.items()}


def truncation_sweep(settings: Settings) -> list[dict]:
    """The truncation sweep over every batch: one row per (strategy, allowance) with its lost share."""
    return totals(TABLES["truncation_sweep"].scan(settings.root).collect()).to_dicts()


TRAINER_LENGTHS = (2048, 4096, 8192, 16384, 32768)  # common trainer `max_length`s, in tokens


def over_lengths(files: list[str]) -> list[dict]:
    """SFT rows per split and category, and how many have more tokens (`tokens`: in the `tokenizer`, or tiktoken's
    encoding) than each of `TRAINER_LENGTHS`: a trainer truncates those at that `max_length`, the end of the last
    assistant turn first."""
    if not files:
        return []
    tokens = pl.col("tokens")
    return (
        pl.scan_parquet(files)
        .group_by("split", "category")
        .agg(rows=pl.len(), max_tokens=tokens.max(), **{f"over_{n}": (tokens > n).sum() for n in TRAINER_LENGTHS})
        .sort("split", "category")
        .collect()
        .to_dicts()
    )


def terminal_text(settings: Settings, files: list[str]) -> dict:
    """Terminal control text normalised in the published samples' observations: messages and characters."""
    if not files:
        return {"messages": 0, "chars": 0}
    samples = pl.scan_parquet(files).select("batch", "trajectory_id")
    totals = (
        TABLES["curated_messages"]
        .scan(settings.root)
        .filter(pl.col("terminal_chars") > 0)
        .join(samples, on=["batch", "trajectory_id"], how="semi")
        .select(messages=pl.len(), chars=pl.col("terminal_chars").sum())
        .collect()
    )
    return {"messages": int(totals["messages"][0]), "chars": int(totals["chars"][0] or 0)}


def redactions(files: list[str]) -> list[dict]:
    """Secrets replaced in a dataset's files, per kind: the placeholders its rows hold."""
    if not files:
        return []
    rows = pl.scan_parquet(files).select(text=pl.struct(pl.all()).struct.json_encode())
    found = (
        rows.select(kind=pl.col("text").str.extract_all(r"<REDACTED:([a-z0-9_]+)>"))
        .explode("kind")
        .drop_nulls()
        .select(pl.col("kind").str.slice(10).str.strip_suffix(">"))
        .group_by("kind")
        .agg(count=pl.len())
        .sort("kind")
        .collect()
    )
    return found.to_dicts()


# Benchmarks agents are often reported on that no shipped list covers: the card names them as not checked.
UNLISTED_BENCHMARKS = ("SWE-bench (full test set)", "SWE-bench Multimodal", "tau-bench", "Terminal-Bench")


def decontamination(settings: Settings, held: pl.DataFrame) -> dict:
    """Each benchmark the `holdout` lists check (its test tasks, the corpus's runs held out by id and by text), and
    the benchmarks not checked: shipped lists not named, and well-known ones no list covers."""
    lists = load(settings.holdout)
    runs = TABLES["trajectories"].scan(settings.root).select("task_id").collect()
    removed = held.join(runs, on="task_id").group_by("benchmark", "reason").agg(runs=pl.len())
    by = {(b, r): n for b, r, n in removed.iter_rows()}
    tests = lists.filter(pl.col("side") == "test").group_by("benchmark", maintain_order=True).agg(test_tasks=pl.len())
    checked = [
        {
            "benchmark": b,
            "test_tasks": n,
            "runs_held_out_by_id": by.get((b, "listed"), 0),
            "runs_held_out_by_text": by.get((b, "contains_test_text"), 0),
        }
        for b, n in tests.iter_rows()
    ]
    unused = [name for name in shipped() if name not in settings.holdout]
    return {
        "checked": checked,
        "not_checked": [*(f"{s} (shipped, not in `holdout`)" for s in unused), *UNLISTED_BENCHMARKS],
    }


def pair_summary(files: list[str]) -> list[dict]:
    """Preference pairs per category (their source): pairs, tasks, and the margins between chosen and rejected."""
    if not files:
        return []
    frame = pl.scan_parquet(files).select("category", "task_id", "margin")
    return (
        frame.group_by("category")
        .agg(
            pairs=pl.len(),
            tasks=pl.col("task_id").n_unique(),
            mean_margin=pl.col("margin").mean().round(3),
            margin_1=(pl.col("margin") >= 1).sum(),
        )
        .sort("category")
        .collect()
        .to_dicts()
    )


def card_inputs(
    settings: Settings, dataset: str, files: list[str], rows: int, held: pl.DataFrame, exclusions: pl.DataFrame | None
) -> dict:
    """What the card of a candidate (its Parquet `files`, `rows` in all) reports beside its row counts; `held`: the
    corpus's held-out tasks (`selection.holdout.corpus_held_out`); `exclusions`: its selection's (None: not selected),
    as the check before publication read them."""
    described = PUBLISHED[dataset]
    training = described.training_card
    lengths = (
        pl.scan_parquet(files).select(described.length.cast(pl.Int64)).collect().to_series().to_list()
        if described.length is not None and files
        else []
    )
    return {
        "funnel": funnel(settings, dataset, rows, held, exclusions),
        "reasons": reasons(exclusions) if exclusions is not None else [],
        "retention": retention(settings) if training else {},
        "sweep": truncation_sweep(settings) if training else [],
        "lengths": lengths,
        "token_lengths": over_lengths(files) if training else [],
        "terminal_text": terminal_text(settings, files) if training else None,
        "redactions": redactions(files),
        "decontamination": decontamination(settings, held),
        "pairs": pair_summary(files) if described.rows == "pairs" else [],
        "budgets": settings.budgets(
            pl.scan_parquet(files).select("category").collect()["category"], coding_categories()
        ).to_dicts()
        if training and files
        else [],
        "settings": settings.content(),
    }
