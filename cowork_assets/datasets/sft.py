"""The SFT dataset: selected runs as `messages` + `tools`, the shape TRL's SFTTrainer and verl's
multi-turn SFT dataset read, with metadata and lineage columns.

`tools` (a list of OpenAI function schemas) and tool-call `arguments` are JSON text here, and published as
Arrow's JSON type (a published dataset's `json_fields`, datasets/schemas.py): as structs, Arrow would unify the
different parameter schemas of different tools into one sparse struct.
"""

from __future__ import annotations

import polars as pl

from cowork_assets.chat_form import published_tools
from cowork_assets.datasets.split import split_expr
from cowork_assets.store.models import function_calls, message_chars
from cowork_assets.tokens import token_text
from cowork_assets.tool_lists import openai_tools

FUNCTION_CALL = pl.Struct(
    {"id": pl.String, "type": pl.String, "function": pl.Struct({"name": pl.String, "arguments": pl.String})}
)
MESSAGE = pl.Struct(
    {
        "role": pl.String,
        "content": pl.String,
        "reasoning_content": pl.String,
        "tool_calls": pl.List(FUNCTION_CALL),
        "tool_call_id": pl.String,
        "name": pl.String,
    }
)
# What a sample needs of curated_messages (its spans and lengths are not read).
CURATED_COLUMNS = ["batch", "trajectory_id", "message_index", *(f.name for f in MESSAGE.fields)]


def rendered_tokens(rows: pl.DataFrame, tokenizer: str) -> list[int]:
    """Each SFT row's tokens as a trainer counts them: its messages and tools rendered by the tokenizer's chat
    template (as `apply_chat_template` is given them: `for_chat_template`), then encoded."""
    from cowork_assets.trainers import for_chat_template
    from cowork_assets.trainers.tokenizer import chat_tokenizer

    counter = chat_tokenizer(tokenizer)
    return [counter.count_sample(*for_chat_template(m, t)) for m, t in rows.select("messages", "tools").iter_rows()]


def token_texts(messages: pl.DataFrame) -> pl.Series:
    """The text whose tokens are counted, of each published message row: counted once, for exactly the text
    that is published."""
    return messages.select(token_text(pl.col("content"), pl.col("tool_calls"), pl.col("reasoning_content"))).to_series()


def chat_messages(messages: pl.DataFrame, tokens: list[int]) -> pl.DataFrame:
    """batch, trajectory_id, messages (list of MESSAGE), chars and tokens from published message rows and their
    tokens: both describe exactly the messages published (`chat_form.published_messages`)."""
    chars = message_chars(pl.col("content"), pl.col("tool_calls"), pl.col("reasoning_content"))
    return (
        messages.with_columns(tokens=pl.Series(tokens, dtype=pl.Int64), chars=chars)
        .with_columns(tool_calls=function_calls(pl.col("tool_calls")))
        .group_by("batch", "trajectory_id", maintain_order=True)
        .agg(
            messages=pl.struct(*(f.name for f in MESSAGE.fields)),
            chars=pl.col("chars").sum(),
            tokens=pl.col("tokens").sum(),
        )
        .with_columns(pl.col("messages").cast(pl.List(MESSAGE)))
    )


def build_sft(
    selected: pl.DataFrame,
    chat: pl.DataFrame,
    stats: pl.DataFrame,
    packages: pl.DataFrame,
    validation_fraction: float,
    training_side: pl.Series | None,
    strategy: str,
    allowance: int,
    text_runs: pl.DataFrame,
    action_format: str,
) -> pl.DataFrame:
    """`selected`: the trajectories rows of the runs that passed selection; `chat`: their `chat_messages`;
    `training_side`: tasks that always land in `train` (`split.split_expr`); `text_runs`: the runs that act in
    text (`chat_form.text_protocol_runs`), published with the tools their agent saw."""
    run = ["batch", "trajectory_id"]
    distinct = packages["tools"].unique()  # thousands of packages share a few dozen tool lists
    converted = pl.DataFrame({"tools": distinct, "openai": [openai_tools(t) for t in distinct]})
    tools = (
        packages.select("task_hash", "tools")
        .unique("task_hash", keep="first", maintain_order=True)
        .join(converted, on="tools", maintain_order="left")
        .select("task_hash", tools="openai")
    )
    return (
        selected.join(chat, on=run, maintain_order="left")
        .join(tools, on="task_hash", how="left", maintain_order="left")
        .join(text_runs.with_columns(text_protocol=pl.lit(True)), on=run, how="left", maintain_order="left")
        .join(
            stats.select(
                "batch",
                "trajectory_id",
                "truncated_messages",
                "trimmed_messages",
                "overflow_chars",
                "verdict",
            ),
            on=["batch", "trajectory_id"],
            how="left",
            maintain_order="left",
        )
        .select(
            pl.col("trajectory_id").alias("sample_id"),
            "messages",
            published_tools(pl.col("tools"), pl.col("text_protocol"), action_format).alias("tools"),
            "task_id",
            "category",
            teacher="teacher_model",
            score="grade_score",
            chars="chars",
            tokens="tokens",
            curation=pl.format(
                "truncation={}@{}; {} observation(s) truncated, {} trimmed, {} chars of evidence overflow",
                pl.lit(strategy),
                pl.lit(allowance),
                "truncated_messages",
                "trimmed_messages",
                "overflow_chars",
            ),
            split=split_expr(pl.col("task_id"), validation_fraction, training_side),
            batch="batch",
            raw_file="raw_file",
            raw_record="raw_record",
            trajectory_id="trajectory_id",
        )
        .sort("split", "task_id", "sample_id")
    )
