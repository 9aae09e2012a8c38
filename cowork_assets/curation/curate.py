"""Curate one chunk of trajectories: truncate, apply the budget, and audit the evidence.

Every registered truncation strategy (truncation/strategies/) is computed at the configured allowance, so
the audit can say what the configured choice costs against the others; only the configured one is applied.
"""

from __future__ import annotations

import polars as pl

from cowork_assets.curation import redact
from cowork_assets.curation.budget import count, template_markup, trim
from cowork_assets.curation.schemas import CuratedMessages, EvidenceAudit, EvidenceRollup, SampleStats
from cowork_assets.curation.secrets import Detector
from cowork_assets.curation.terminal import normalised
from cowork_assets.curation.truncate import VALUE, Shown, cores, cut, long_observations
from cowork_assets.evidence.locate import shown
from cowork_assets.ingest.formats import coding_categories
from cowork_assets.settings import CurationSettings
from cowork_assets.store.models import polars_schema
from cowork_assets.tokens import token_text
from cowork_assets.truncation.strategies import names

KEY = ["trajectory_id", "message_index"]
SPAN_LEN = pl.element().struct.field("end") - pl.element().struct.field("start")


def apply_cuts(
    messages: pl.DataFrame, cuts: pl.DataFrame, settings: CurationSettings, counted: pl.Series | None = None
) -> pl.DataFrame:
    """Messages with the cuts applied. Tokens are counted only for the trajectories in `counted` (those with a
    token budget): the others' are counted once, for the samples that are published."""
    length = pl.col("original").str.len_chars().fill_null(0)
    out = (
        messages.rename({"content": "original"})
        .join(cuts, on=KEY, how="left", maintain_order="left")
        .with_columns(
            truncated=pl.col("new_content").is_not_null(),
            content=pl.coalesce("new_content", "original"),
            original_chars=length.cast(pl.Int64),
            overflow_chars=pl.col("overflow_chars").fill_null(0),
            kept_spans=pl.when(pl.col("new_content").is_null())
            .then(pl.concat_list(pl.struct(start=pl.lit(0, pl.Int64), end=length.cast(pl.Int64))))
            .otherwise("kept_spans"),
            trimmed=pl.lit(False),
        )
        .with_columns(
            kept_chars=pl.col("kept_spans").list.eval(SPAN_LEN).list.sum().cast(pl.Int64),
            chars=pl.col("chars") - pl.col("original_chars") + pl.col("content").str.len_chars().fill_null(0),
        )
    )
    if counted is None or counted.is_empty():
        return out.with_columns(tokens=pl.lit(None, pl.Int64))
    needed = out.filter(pl.col("trajectory_id").is_in(counted.implode()))
    texts = needed.select(token_text(pl.col("content"), pl.col("tool_calls"), pl.col("reasoning_content")))
    tokens = needed.select(*KEY).with_columns(tokens=pl.Series(count(texts[:, 0].to_list(), settings), dtype=pl.Int64))
    return out.join(tokens, on=KEY, how="left", maintain_order="left")


def curate_chunk(
    batch: str,
    trajectories: pl.DataFrame,
    messages: pl.DataFrame,
    evidence: pl.DataFrame,
    settings: CurationSettings,
    tools: pl.DataFrame | None = None,
) -> dict[str, pl.DataFrame]:
    """The curated tables of one chunk. `tools` (task_hash, tools: the batch's task packages) is read only with a
    `tokenizer`: its chat template renders them, and the budget counts what it adds."""
    if settings.reasoning == "drop":  # before anything counts it
        reasoning = pl.col("reasoning_content").str.len_chars().fill_null(0)
        messages = messages.with_columns(chars=pl.col("chars") - reasoning, reasoning_content=pl.lit(None, pl.String))
    at_risk = evidence.filter(pl.col("status") == "at_risk").unique(["trajectory_id", "norm"], maintain_order=True)
    before_use = Shown(shown(at_risk))  # occurrences found by the evidence stage; not searched again
    long = long_observations(messages, at_risk, settings.max_observation_chars)
    cuts = {  # only the configured cut's text is needed: the others are compared by their spans and sizes
        s: cut(
            messages,
            at_risk,
            s,
            settings.max_observation_chars,
            settings.evidence_context_chars,
            long,
            text=s == settings.truncation_strategy,
        )
        for s in names()
    }
    # The budget: each trajectory's is its category's (settings.budgets).
    budgets = trajectories.select("trajectory_id", "category").join(
        settings.budgets(trajectories["category"], coding_categories()), on="category", how="left"
    )
    # Secrets are found before any cut; the budget reserves what their placeholders may add.
    found = redact.find(messages, Detector(tuple(settings.secret_allowlist))) if settings.redact_secrets else None
    found = found if found is not None else pl.DataFrame(schema=redact.FOUND)
    budgets = (
        budgets.join(redact.reserve(messages, found), on="trajectory_id", how="left", maintain_order="left")
        .with_columns(char_budget=pl.col("char_budget") - pl.col("reserve").fill_null(0))
        .drop("reserve")
    )
    counted = budgets.filter(pl.col("token_budget").is_not_null())["trajectory_id"]
    curated = apply_cuts(messages, cuts[settings.truncation_strategy], settings, counted)
    rendered = _markup(curated, trajectories, tools, settings)
    unrenderable = rendered.filter(pl.col("template_error").is_not_null())
    budgets = budgets.join(rendered.select("trajectory_id", "markup"), on="trajectory_id", how="left")
    budgets = budgets.with_columns(pl.col("markup").fill_null(0))

    totals = (
        curated.group_by("trajectory_id", maintain_order=True)
        .agg(
            chars_after=pl.col("chars").sum(),
            tokens_after=pl.when(pl.col("tokens").is_not_null().any()).then(pl.col("tokens").sum()).cast(pl.Int64),
            truncated_messages=pl.col("truncated").sum().cast(pl.Int32),
            overflow_chars=pl.col("overflow_chars").sum(),
        )
        .join(budgets.select("trajectory_id", "markup"), on="trajectory_id", how="left", maintain_order="left")
        .with_columns(pl.col("tokens_after") + pl.col("markup"))
        .drop("markup")
    )
    sized = totals.join(budgets, on="trajectory_id", how="left", maintain_order="left")
    over = (pl.col("chars_after") > pl.col("char_budget")) | (
        pl.col("tokens_after") > pl.col("token_budget")
    ).fill_null(False)
    over = over & ~pl.col("trajectory_id").is_in(unrenderable["trajectory_id"].implode())  # excluded anyway
    over_ids = sized.filter(over)["trajectory_id"].to_list()
    if settings.budget_policy == "trim" and over_ids:
        replaced, verdict = trim(
            curated, cores(at_risk), budgets.filter(pl.col("trajectory_id").is_in(over_ids)), settings
        )
        curated = curated.update(replaced.with_columns(trimmed=pl.lit(True)), on=KEY)
    else:
        verdict = sized.filter(over).select(
            "trajectory_id",
            "chars_after",
            "tokens_after",
            verdict=pl.lit("dropped"),
            trimmed_messages=pl.lit(0, pl.Int32),
            reason=pl.when(pl.col("token_budget").is_not_null())
            .then(pl.format("over budget: {} chars, {} tokens", "chars_after", "tokens_after"))
            .otherwise(pl.format("over budget: {} chars", "chars_after")),
        )
    stats = _sample_stats(batch, trajectories, cuts, totals, verdict).update(
        unrenderable.select(
            "trajectory_id",
            verdict=pl.lit("unrenderable"),
            reason=pl.format("the tokenizer's chat template cannot render it: {}", "template_error"),
        ),
        on="trajectory_id",
    )

    # What the budget took: dropped samples lose everything; trimmed ones are re-checked.
    final_cuts = curated.filter(pl.col("truncated") | pl.col("trimmed")).select(*KEY, "kept_spans")
    survives = before_use.survival(cuts | {"final": final_cuts})
    audit = _audit(batch, evidence, survives, stats, settings.truncation_strategy)
    curated = normalised(curated, KEY)  # last: the cuts and the trim render from the original text
    curated, redactions = redact.apply(curated, found, batch)
    stats = _recounted(stats, curated, redactions)
    return {
        "curated_messages": curated.with_columns(batch=pl.lit(batch)).select(polars_schema(CuratedMessages).names()),
        "sample_stats": stats,
        "evidence_audit": audit,
        "evidence_rollup": _rollup(batch, audit, stats, redact.evidence(evidence, found)),
        "redactions": redactions,
    }


def _markup(curated, trajectories, tools, settings: CurationSettings) -> pl.DataFrame:
    """trajectory_id, markup, template_error: the tokens the trainer's chat template adds to each sample, or why it
    cannot render it (`budget.template_markup`); every sample is rendered, so one its template cannot render is
    excluded rather than failing its publication. Nothing without a `tokenizer`: tiktoken counts the texts alone."""
    if not settings.tokenizer or curated.is_empty():
        return pl.DataFrame(schema={"trajectory_id": pl.String, "markup": pl.Int64, "template_error": pl.String})
    if tools is None:
        raise ValueError("counting with a tokenizer needs the batch's tool lists (curate_chunk's `tools`)")
    rows = curated.join(
        trajectories.select("trajectory_id", "task_hash"), on="trajectory_id", how="left", maintain_order="left"
    )
    return template_markup(rows, tools, settings.tokenizer, settings.action_format)


def _recounted(stats: pl.DataFrame, curated: pl.DataFrame, redactions: pl.DataFrame) -> pl.DataFrame:
    """The samples' characters after their secrets were replaced (the placeholders' length, not the secrets')."""
    changed = redactions["trajectory_id"].unique()
    if changed.is_empty():
        return stats
    after = (
        curated.filter(pl.col("trajectory_id").is_in(changed.implode()))
        .group_by("trajectory_id")
        .agg(chars_after=pl.col("chars").sum())
    )
    kept = stats.filter(pl.col("verdict") != "dropped").select("trajectory_id")
    return stats.update(after.join(kept, on="trajectory_id"), on="trajectory_id")


def _sample_stats(batch, trajectories, cuts, totals, verdict) -> pl.DataFrame:
    chars = pl.concat(
        [
            cut.group_by("trajectory_id").agg(strategy=pl.lit(name), saved=pl.col("saved_chars").sum())
            for name, cut in cuts.items()
        ]
    )
    stats = trajectories.select(
        "trajectory_id",
        "task_id",
        "category",
        "teacher_role",
        "grade_passed",
        chars_before="chars_total",
    ).join(totals, on="trajectory_id", how="left", maintain_order="left")
    under = (
        stats.select("trajectory_id", "chars_before")
        .join(pl.DataFrame({"strategy": list(cuts)}), how="cross")
        .join(chars, on=["trajectory_id", "strategy"], how="left", maintain_order="left")
        .group_by("trajectory_id", maintain_order=True)
        .agg(
            chars_under=pl.struct(
                "strategy", chars=(pl.col("chars_before") - pl.col("saved").fill_null(0)).cast(pl.Int64)
            )
        )
    )
    stats = stats.join(under, on="trajectory_id", how="left", maintain_order="left")
    stats = stats.with_columns(
        verdict=pl.lit("kept"), trimmed_messages=pl.lit(0, pl.Int32), reason=pl.lit(None, pl.String)
    )
    stats = stats.update(verdict, on="trajectory_id")
    return stats.with_columns(batch=pl.lit(batch)).select(polars_schema(SampleStats).names())


def _audit(batch, evidence, survives: pl.DataFrame, stats, strategy) -> pl.DataFrame:
    """The evidence items with what each cut (`survives_<name>` of `survives`: the strategies' and the final one)
    and the budget lost."""
    audit = evidence.join(survives, on=VALUE, how="left", maintain_order="left")
    cuts = [c.removeprefix("survives_") for c in survives.columns if c.startswith("survives_")]
    at_risk = pl.col("status") == "at_risk"
    lost = {name: at_risk & ~pl.col(f"survives_{name}").fill_null(False) for name in cuts}
    dropped = stats.filter(pl.col("verdict") == "dropped").select("trajectory_id", dropped=pl.lit(True))
    strategies = [name for name in cuts if name != "final"]
    return (
        audit.join(dropped, on="trajectory_id", how="left", maintain_order="left")
        .with_columns(
            lost_under=pl.concat_list(pl.when(lost[name]).then(pl.lit(name)) for name in strategies).list.drop_nulls(),
            lost_to_truncation=lost[strategy],
        )
        .with_columns(
            lost_to_budget=pl.col("dropped").fill_null(False) | (lost["final"] & ~pl.col("lost_to_truncation"))
        )
        .with_columns(batch=pl.lit(batch))
        .select(polars_schema(EvidenceAudit).names())
    )


def _rollup(batch, audit, stats, redacted: pl.DataFrame) -> pl.DataFrame:
    secret = redacted.group_by("trajectory_id").agg(redacted_evidence=pl.len().cast(pl.Int32))
    counts = audit.group_by("trajectory_id").agg(
        items=pl.len().cast(pl.Int32),
        at_risk=(pl.col("status") == "at_risk").sum().cast(pl.Int32),
        **{c: pl.col(c).sum().cast(pl.Int32) for c in ("lost_to_truncation", "lost_to_budget")},
    )
    return (
        stats.select(
            "trajectory_id",
            "task_id",
            "category",
            "verdict",
            passing_teacher=(pl.col("teacher_role") == "teacher") & pl.col("grade_passed").fill_null(False),
        )
        .join(counts, on="trajectory_id", how="left", maintain_order="left")
        .join(secret, on="trajectory_id", how="left", maintain_order="left")
        .with_columns(
            pl.col(c).fill_null(0)
            for c in ("items", "at_risk", "lost_to_truncation", "lost_to_budget", "redacted_evidence")
        )
        .with_columns(batch=pl.lit(batch))
        .select(polars_schema(EvidenceRollup).names())
    )
