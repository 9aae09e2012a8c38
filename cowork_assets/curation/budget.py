"""The sample budget: characters (and optionally tokens) per curated sample, with drop or trim.

`trim` shortens the oldest observations first, each down to the part of what truncation kept that
lies in its evidence windows, and stops as soon as the sample fits; a sample still over is dropped.
Only over-budget samples are visited, so the loop is over few trajectories.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from cowork_assets.curation.spans import intersect, render, total, widen
from cowork_assets.tokens import count_tokens


@dataclass(frozen=True)
class Budget:
    chars: int
    tokens: int | None
    policy: str  # "drop" | "trim"
    context: int
    encoding: str

    def over(self, chars: int, tokens: int | None) -> str | None:
        if chars > self.chars:
            return f"{chars} chars > {self.chars}"
        if self.tokens is not None and tokens > self.tokens:
            return f"{tokens} tokens > {self.tokens}"
        return None


def verdicts(totals: pl.DataFrame, budget: Budget) -> pl.DataFrame:
    """Per trajectory: kept, or over budget (the trim step may still save it)."""
    over = pl.col("chars_after") > budget.chars
    if budget.tokens is not None:
        over = over | (pl.col("tokens_after") > budget.tokens)
    return totals.with_columns(over=over)


def trim(curated: pl.DataFrame, cores: pl.DataFrame, trajectory_ids: list[str], budget: Budget):
    """Trim the given over-budget trajectories. Returns (replacement rows, verdict rows)."""
    rows, outcome = [], []
    cols = ["trajectory_id", "message_index", "role", "original", "kept_spans", "chars", "tokens"]
    subset = curated.filter(pl.col("trajectory_id").is_in(trajectory_ids)).join(
        cores, on=["trajectory_id", "message_index"], how="left").sort("trajectory_id", "message_index")
    counting = budget.tokens is not None  # tokens are counted only for a token budget
    for (tid,), frame in subset.group_by("trajectory_id", maintain_order=True):
        chars, tokens = frame["chars"].sum(), frame["tokens"].sum() if counting else None
        trimmed = 0
        for m in frame.filter(pl.col("role") == "tool").select(*cols, "start", "end").iter_rows(named=True):
            if not budget.over(chars, tokens):
                break
            length = len(m["original"])
            current = [(s["start"], s["end"]) for s in m["kept_spans"]] if m["kept_spans"] is not None else [(0, length)]
            windows = widen(list(zip(m["start"] or [], m["end"] or [])), budget.context, length)
            spans = intersect(current, windows)
            text = render(m["original"], spans)
            if len(text) >= m["chars"]:
                continue  # a marker would not be shorter than what is there
            new_tokens = count_tokens([text], budget.encoding)[0] if counting else None
            chars += len(text) - m["chars"]
            if counting:
                tokens += new_tokens - m["tokens"]
            trimmed += 1
            rows.append((tid, m["message_index"], [{"start": s, "end": e} for s, e in spans], text, len(text),
                         new_tokens, total(spans)))
        still = budget.over(chars, tokens)
        outcome.append((tid, "dropped" if still else "trimmed", trimmed, chars, tokens,
                        f"over budget after trimming {trimmed} observation(s): {still}" if still
                        else f"trimmed {trimmed} observation(s) to fit"))
    replaced = pl.DataFrame(rows, orient="row", schema={
        "trajectory_id": pl.String, "message_index": pl.Int32, "kept_spans": curated.schema["kept_spans"],
        "content": pl.String, "chars": pl.Int64, "tokens": pl.Int64, "kept_chars": pl.Int64})
    verdict = pl.DataFrame(outcome, orient="row", schema={
        "trajectory_id": pl.String, "verdict": pl.String, "trimmed_messages": pl.Int32,
        "chars_after": pl.Int64, "tokens_after": pl.Int64, "reason": pl.String})
    return replaced, verdict
