"""The truncation sweep: how much at-risk evidence each way of cutting tool observations loses, at
allowances from 250 to 16,000 characters, so a trainer can pick its rollout-time truncation.

verl's multi-turn rollout cuts tool responses by position (`max_tool_response_length`,
`tool_response_truncate_side`): `head` keeps the first N characters (side `left`), `tail` the last N
(`right`), `middle` the first N/2 and the last N - N/2 (`middle`). `evidence_aware` is this project's
own cut (curation/truncate.py), which keeps every at-risk value and overflows the allowance when it
must. An at-risk item survives a cut when some occurrence before its first use lies wholly in kept
text (or in a message the cut leaves whole), and items are counted per check, exactly as the evidence
audit decides and counts them.
"""

from __future__ import annotations

import polars as pl

from cowork_assets.curation.schemas import TruncationSweep
from cowork_assets.curation.truncate import KEY, Shown, kept_spans, observations
from cowork_assets.evidence.locate import shown
from cowork_assets.markdown import Markdown
from cowork_assets.store.models import polars_schema
from cowork_assets.truncation.strategies import names, registry

ALLOWANCES = (250, 500, 1000, 2000, 4000, 8000, 16000)
TARGET = 0.99  # the share of at-risk evidence a recommended allowance keeps
SCHEMA = polars_schema(TruncationSweep, without=("batch",))


def sweep(
    trajectories: pl.DataFrame,
    messages: pl.DataFrame | pl.LazyFrame,
    evidence: pl.DataFrame,
    evidence_context_chars: int,
    allowances: tuple[int, ...] = ALLOWANCES,
) -> pl.DataFrame:
    """Per (category, strategy, allowance): at-risk items, how many the cut loses, and the observation
    characters it keeps (of how many). `messages`: trajectory_id, message_index, role, content; a scan of
    them is read for the observations' lengths only."""
    category = trajectories.select("trajectory_id", "category")
    rows = evidence.filter(pl.col("status") == "at_risk")  # items as the evidence audit counts them: per check
    at_risk = rows.unique(["trajectory_id", "norm"], maintain_order=True)
    items = rows.select("trajectory_id", "norm").join(category, on="trajectory_id")
    # Positions only (no strategy here needs the text), each observation with its trajectory's category.
    every = observations(messages, at_risk, content=False).join(category, on="trajectory_id")
    occurrences = shown(at_risk).select("trajectory_id", "norm", "message_index", "offset", "length")
    span_chars = pl.col("kept_spans").list.eval(pl.element().struct.field("end") - pl.element().struct.field("start"))
    # Each configuration (strategy, allowance) gives what its cuts take off each category's observations and
    # the values they lose: small parts, tallied together once.
    configs = pl.DataFrame(
        [(name, n) for n in allowances for name in registry()],
        schema={"strategy": pl.String, "n": pl.Int64},
        orient="row",
    ).with_row_index("config")
    before_use = Shown(occurrences)
    cuts, spans = [], []  # per strategy: what it keeps of each long observation; the spans it keeps
    for name, module in registry().items():
        # each observation at every allowance it exceeds, cut at all of them at once (the allowance a column)
        at = configs.filter(pl.col("strategy") == name).select("config", "n")
        long = every.lazy().join(at.lazy(), how="cross").filter(pl.col("shown") > pl.col("n")).collect()
        if getattr(module, "KEEPS_ALL_EVIDENCE", False):  # loses nothing: only its characters are needed
            found = long.with_columns(kept=module.kept_chars(long, pl.col("n"), evidence_context_chars)["kept_chars"])
        else:
            found = kept_spans(long, name, pl.col("n"), evidence_context_chars).with_columns(kept=span_chars.list.sum())
            spans.append(found.select(*KEY, "kept_spans", "config"))
        cuts.append(found.select("category", "length", "kept", "config"))
    taken = pl.concat(cuts).group_by("category", "config").agg(taken=(pl.col("length") - pl.col("kept")).sum())
    gone = before_use.lost(pl.concat(spans), by=("config",))
    return _tally(every, items, before_use.counts, configs, taken, gone)


def _tally(
    every: pl.DataFrame,
    items: pl.DataFrame,
    shown_values: pl.DataFrame,
    configs: pl.DataFrame,
    taken: pl.DataFrame,
    gone: pl.DataFrame,
) -> pl.DataFrame:
    """Per category with observations and configuration of `configs`: its at-risk items, those lost (`gone`, or
    with no occurrence to keep: not in `shown_values`), and the characters kept (the observations' less what
    the cuts `taken`)."""
    group, pair = ["category", "config"], ["trajectory_id", "norm"]
    unseen = items.join(shown_values, on=pair, how="anti").group_by("category").agg(unseen=pl.len())
    return (
        every.group_by("category")
        .agg(observation_chars=pl.col("length").sum())
        .join(configs, how="cross")
        .join(items.group_by("category").agg(at_risk_items=pl.len()), on="category", how="left")
        .join(unseen, on="category", how="left")
        .join(taken, on=group, how="left")
        .join(items.join(gone, on=pair).group_by(group).agg(lost=pl.len()), on=group, how="left")
        .select(
            "category",
            "strategy",
            max_observation_chars="n",
            at_risk_items=pl.col("at_risk_items").fill_null(0),
            lost_items=pl.col("unseen").fill_null(0) + pl.col("lost").fill_null(0),
            kept_chars=pl.col("observation_chars") - pl.col("taken").fill_null(0),
            observation_chars="observation_chars",
        )
        .sort("category", "strategy", "max_observation_chars")
        .cast(SCHEMA)
    )


def totals(frame: pl.DataFrame) -> pl.DataFrame:
    """The sweep summed over categories (and batches): one row per (strategy, allowance), with the lost share."""
    return (
        frame.group_by("strategy", "max_observation_chars")
        .agg(pl.col("at_risk_items", "lost_items", "kept_chars", "observation_chars").sum())
        .with_columns(
            lost_share=pl.when(pl.col("at_risk_items") > 0)
            .then(pl.col("lost_items") / pl.col("at_risk_items"))
            .otherwise(0.0)
        )
        .sort("strategy", "max_observation_chars")
    )


def recommendation(frame: pl.DataFrame) -> list[str]:
    """Per verl truncation side, the smallest allowance that keeps at least 99% of at-risk evidence."""
    summed = totals(frame)
    lines = []
    for strategy, module in registry().items():
        if module.VERL_SIDE is None:
            continue
        rows = summed.filter(pl.col("strategy") == strategy, pl.col("lost_share") <= 1 - TARGET)
        side = module.VERL_SIDE
        if rows.is_empty():
            largest = summed.filter(pl.col("strategy") == strategy)["max_observation_chars"].max()
            lines.append(
                f"tool_response_truncate_side={side}: no allowance up to {largest} keeps 99% of at-risk "
                "evidence; keep tool responses whole or curate them evidence-aware first"
            )
        else:
            best = rows.row(0, named=True)
            lines.append(
                f"tool_response_truncate_side={side}: max_tool_response_length={best['max_observation_chars']} "
                f"keeps {1 - best['lost_share']:.1%} of {best['at_risk_items']} at-risk evidence items"
            )
    return lines


def sweep_chart(frame: pl.DataFrame, width: int = 20) -> Markdown:
    """The lost share per strategy and allowance as a Markdown table of bars (renders in the Dagster UI)."""
    summed = totals(frame)
    allowances = sorted(set(summed["max_observation_chars"]))
    lines = ["| strategy | " + " | ".join(f"{n:,}" for n in allowances) + " |", "|---" * (len(allowances) + 1) + "|"]
    for strategy in names():
        shares = dict(
            summed.filter(pl.col("strategy") == strategy).select("max_observation_chars", "lost_share").iter_rows()
        )
        cells = [f"{'█' * round(shares[n] * width / 4):<1} {shares[n]:.1%}" if n in shares else "—" for n in allowances]
        lines.append(f"| {strategy} | " + " | ".join(cells) + " |")
    return Markdown("\n".join(["lost share of at-risk evidence", "", *lines]))
