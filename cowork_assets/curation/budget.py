"""The sample budget: characters (and optionally tokens) per curated sample, with drop or trim.

`trim` shortens the oldest observations first, each down to the part of what truncation kept that
lies in its evidence windows, and stops as soon as the sample fits; a sample still over is dropped.
Only over-budget samples are visited, so the loop is over few trajectories.
"""

from __future__ import annotations

from itertools import groupby
from operator import itemgetter

import polars as pl

from cowork_assets.chat_form import published_messages, published_tools, text_protocol_runs, with_action_format
from cowork_assets.settings import CurationSettings
from cowork_assets.store.models import function_calls
from cowork_assets.tokens import count_tokens
from cowork_assets.tool_lists import openai_tools
from cowork_assets.trainers import for_chat_template
from cowork_assets.trainers.tokenizer import chat_tokenizer
from cowork_assets.truncation.spans import intersect, render, total, widen

CHAT_FIELDS = ["role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name"]


def count(texts: list[str], settings: CurationSettings) -> list[int]:
    """Tokens of each text, as the budget counts them: in the trainer's tokenizer (setting `tokenizer`) or
    tiktoken's encoding. In this process: batches already run side by side, and helpers per chunk would not
    repay starting."""
    if settings.tokenizer:
        return chat_tokenizer(settings.tokenizer).count_texts(texts)
    return count_tokens(texts, settings.token_encoding, workers=1)


def template_markup(messages: pl.DataFrame, tools: pl.DataFrame, tokenizer: str, action_format: str) -> pl.DataFrame:
    """trajectory_id, markup, template_error: the tokens a trainer's chat template adds to each trajectory's counted
    messages (`messages`: their curated rows with `tokens` and `task_hash`; `tools`: task_hash, tools), measured by
    rendering the sample in its published form (`chat_form`); or, for a sample the template cannot render, its
    error (markup null). The messages' own tokens are summed as curated: a text action is counted with its call
    even where it is published as text alone, so the budget never counts less than the published rendering."""
    published = with_action_format(published_messages(messages), action_format)
    chat = (
        published.with_columns(tool_calls=function_calls(pl.col("tool_calls")))
        .group_by("trajectory_id", "task_hash", maintain_order=True)
        .agg(messages=pl.struct(*CHAT_FIELDS))
        .join(messages.group_by("trajectory_id").agg(texts=pl.col("tokens").sum()), on="trajectory_id", how="left")
        .join(tools, on="task_hash", how="left", maintain_order="left")
        .join(text_protocol_runs(messages).with_columns(text=pl.lit(True)), on="trajectory_id", how="left")
        .with_columns(tools=published_tools(pl.col("tools").fill_null("[]"), pl.col("text"), action_format))
    )
    counter = chat_tokenizer(tokenizer)
    rendered, errors = [], []
    for m, t in chat.select("messages", "tools").iter_rows():
        try:
            rendered.append(counter.count_sample(*for_chat_template(m, openai_tools(t))))
            errors.append(None)
        except Exception as error:  # a template raises what it likes: raise_exception, TypeError, UndefinedError
            rendered.append(None)
            errors.append(f"{type(error).__name__}: {error}")
    return chat.select(
        "trajectory_id",
        markup=pl.Series(rendered, dtype=pl.Int64) - pl.col("texts"),
        template_error=pl.Series(errors, dtype=pl.String),
    )


def over_budget(char_budget: int, token_budget: int | None, chars: int, tokens: int | None) -> str | None:
    """Why a sample of this size is over its budget, or None."""
    if chars > char_budget:
        return f"{chars} chars > {char_budget}"
    if token_budget is not None and tokens > token_budget:
        return f"{tokens} tokens > {token_budget}"
    return None


def trim(curated: pl.DataFrame, cores: pl.DataFrame, budgets: pl.DataFrame, settings: CurationSettings):
    """Trim the over-budget trajectories of `budgets` (trajectory_id, char_budget, token_budget: each its
    category's; markup: the chat template's tokens, counted with the messages'). Returns (replacement rows,
    verdict rows)."""
    rows, outcome = [], []
    trajectory_ids = budgets["trajectory_id"].to_list()
    limit = {
        tid: (c, t, markup)
        for tid, c, t, markup in budgets.select("trajectory_id", "char_budget", "token_budget", "markup").iter_rows()
    }
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
        char_budget, token_budget, markup = limit[tid]
        counting = token_budget is not None  # tokens are counted only for a token budget
        tokens = tokens + markup if counting else None
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
            new_tokens = count([text], settings)[0] if counting else None
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
