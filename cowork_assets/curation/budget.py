"""The sample budget: characters (and optionally tokens) per curated sample, with drop or trim.

`trim` shortens the oldest observations first, each down to the part of what truncation kept that
lies in its evidence windows, and stops as soon as the sample fits; a sample still over is dropped.
Only over-budget samples are visited, so the loop is over few trajectories.
"""

from __future__ import annotations

from itertools import groupby
from operator import itemgetter

import polars as pl

from cowork_assets.curation.spans import intersect, render, total, widen
from cowork_assets.settings import CurationSettings
from cowork_assets.tokens import count_tokens


def over_budget(char_budget: int, token_budget: int | None, chars: int, tokens: int | None) -> str | None:
    """Why a sample of this size is over its budget, or None."""
    if chars > char_budget:
        return f"{chars} chars > {char_budget}"
    if token_budget is not None and tokens > token_budget:
        return f"{tokens} tokens > {token_budget}"
    return None


def trim(curated: pl.DataFrame, cores: pl.DataFrame, budgets: pl.DataFrame, settings: CurationSettings):
    """Trim the over-budget trajectories of `budgets` (trajectory_id, char_budget, token_budget: each its
    category's). Returns (replacement rows, verdict rows)."""
    rows, outcome = [], []
    trajectory_ids = budgets["trajectory_id"].to_list()
    limit = {tid: (c, t) for tid, c, t in budgets.select("trajectory_id", "char_budget", "token_budget").iter_rows()}
    cols = ["trajectory_id", "message_index", "role", "original", "kept_spans", "chars", "tokens"]
    subset = (
        curated.filter(pl.col("trajectory_id").is_in(trajectory_ids))
        .join(cores, on=["trajectory_id", "message_index"], how="left")
        .sort("trajectory_id", "message_index")
    )
    totals = subset.group_by("trajectory_id", maintain_order=True).agg(pl.col("chars").sum(), pl.col("tokens").sum())
    observations = subset.filter(pl.col("role") == "tool").select(*cols, "start", "end").iter_rows(named=True)
    by_trajectory = {tid: list(found) for tid, found in groupby(observations, key=itemgetter("trajectory_id"))}
    for tid, chars, tokens in totals.iter_rows():  # one pass, not polars calls per trajectory
        char_budget, token_budget = limit[tid]
        counting = token_budget is not None  # tokens are counted only for a token budget
        tokens = tokens if counting else None
        trimmed = 0
        for m in by_trajectory.get(tid, []):
            if not over_budget(char_budget, token_budget, chars, tokens):
                break
            length = len(m["original"])
            current = (
                [(s["start"], s["end"]) for s in m["kept_spans"]] if m["kept_spans"] is not None else [(0, length)]
            )
            windows = widen(list(zip(m["start"] or [], m["end"] or [])), settings.evidence_context_chars, length)
            spans = intersect(current, windows)
            text = render(m["original"], spans)
            if len(text) >= m["chars"]:
                continue  # a marker would not be shorter than what is there
            new_tokens = count_tokens([text], settings.token_encoding)[0] if counting else None
            chars += len(text) - m["chars"]
            if counting:
                tokens += new_tokens - m["tokens"]
            trimmed += 1
            rows.append(
                (
                    tid,
                    m["message_index"],
                    [{"start": s, "end": e} for s, e in spans],
                    text,
                    len(text),
                    new_tokens,
                    total(spans),
                )
            )
        still = over_budget(char_budget, token_budget, chars, tokens)
        outcome.append(
            (
                tid,
                "dropped" if still else "trimmed",
                trimmed,
                chars,
                tokens,
                f"over budget after trimming {trimmed} observation(s): {still}"
                if still
                else f"trimmed {trimmed} observation(s) to fit",
            )
        )
    replaced = pl.DataFrame(
        rows,
        orient="row",
        schema={
            "trajectory_id": pl.String,
            "message_index": pl.Int32,
            "kept_spans": curated.schema["kept_spans"],
            "content": pl.String,
            "chars": pl.Int64,
            "tokens": pl.Int64,
            "kept_chars": pl.Int64,
        },
    )
    verdict = pl.DataFrame(
        outcome,
        orient="row",
        schema={
            "trajectory_id": pl.String,
            "verdict": pl.String,
            "trimmed_messages": pl.Int32,
            "chars_after": pl.Int64,
            "tokens_after": pl.Int64,
            "reason": pl.String,
        },
    )
    return replaced, verdict
