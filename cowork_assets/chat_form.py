"""A run's conversation in the form it is published: the one home of that form, so the budget (which renders it with
a trainer's chat template) and the SFT dataset (which publishes it) see the same messages and tools.

- It ends at its last assistant turn: a trailing user turn (a simulated user's "###STOP###") teaches nothing.
- Each text-protocol action (a call of type `TEXT_ACTION`, read from the assistant's text at ingest) is published
  once (`action_format`): `native`, the turn as the agent wrote it and its output the user turn the harness sent;
  `tool_calls`, a call of type `function` with the block the harness executed taken out of the text.
- `content` is always text (`""` for a turn that only calls tools): mainstream chat templates read it as a string
  (Qwen3's tests `'<think>' in content`, Phi-4's concatenates it).
- One system message, first: the system messages a harness writes before the conversation (Codex's base and
  permission instructions) are joined into one; one it writes later is published as a user turn. Templates that
  take a system prompt take one, at the start (Qwen3.5's and Gemma's raise otherwise).
- A tool message answers a call: one whose call is not in the run (a harness's complaint about a reply it could not
  parse, ATIF's `?` results) is published as the user turn it was to the agent (MiniMax's template raises otherwise).
- A text-protocol run in `native` form publishes no tool list: the agent was told to answer in shell blocks, and a
  tool list makes tool-aware templates add instructions to answer in JSON calls, which its answers contradict.
"""

from __future__ import annotations

import polars as pl

from cowork_assets.text_actions import TEXT_ACTION, without_action

NO_TOOLS = "[]"


def _is_text_call(tool_calls: pl.Expr) -> pl.Expr:
    return tool_calls.list.eval(pl.element().struct.field("type") == TEXT_ACTION).list.any().fill_null(False)


def _run_key(messages: pl.DataFrame) -> list[str]:
    return [c for c in ("batch", "trajectory_id") if c in messages.columns]


def published_messages(curated: pl.DataFrame) -> pl.DataFrame:
    """The curated message rows (of some runs) as published, in conversation order (see the module's docstring):
    cut after the last assistant turn, no null content, one system message first, no tool message without its
    call. `action_format` is applied by `with_action_format`."""
    run = _run_key(curated)
    last_answer = pl.col("message_index").filter(pl.col("role") == "assistant").max().over(run)
    rows = (
        curated.filter(pl.col("message_index") <= last_answer)
        .sort(*run, "message_index")
        .with_columns(content=pl.col("content").fill_null(""))
    )
    called = rows.select(*run, tool_call_id=pl.col("tool_calls").list.eval(pl.element().struct.field("id"))).explode(
        "tool_call_id"
    )
    answers = called.drop_nulls().unique().with_columns(answers_a_call=pl.lit(True))
    rows = rows.join(answers, on=[*run, "tool_call_id"], how="left", maintain_order="left")
    # A tool message answers the calls of the assistant turn its run of tool messages follows: one after a turn
    # that made no call, or naming a call the run never made, answers none (a null id only cannot say which).
    after_calls = (
        pl.when(pl.col("role") != "tool")
        .then((pl.col("role") == "assistant") & (pl.col("tool_calls").list.len() > 0).fill_null(False))
        .forward_fill()
        .over(run)
        .fill_null(False)
    )
    unknown_id = pl.col("tool_call_id").is_not_null() & pl.col("answers_a_call").is_null()
    stray = (pl.col("role") == "tool") & (~after_calls | unknown_id)
    leading = ((pl.col("role") != "system").cum_sum().over(run) == 0) & (pl.col("role") == "system")
    rows = rows.with_columns(
        role=pl.when(stray | ((pl.col("role") == "system") & ~leading)).then(pl.lit("user")).otherwise("role"),
        tool_call_id=pl.when(stray).then(None).otherwise("tool_call_id"),
        name=pl.when(stray).then(None).otherwise("name"),
        leading=leading,
    ).drop("answers_a_call")
    systems = rows.filter(pl.col("leading"))
    if systems.is_empty() or systems.group_by(run).len()["len"].max() == 1:
        return rows.drop("leading")
    merged = systems.group_by(run, maintain_order=True).agg(
        pl.all().exclude("content").first(), content=pl.col("content").str.join("\n\n")
    )
    return (
        pl.concat([merged.select(rows.columns), rows.filter(~pl.col("leading"))])
        .sort(*run, "message_index")
        .drop("leading")
    )


def with_action_format(messages: pl.DataFrame, action_format: str) -> pl.DataFrame:
    """Published message rows with each text-protocol action once (see the module's docstring)."""
    e = pl.element()
    text_call = _is_text_call(pl.col("tool_calls"))
    if action_format == "tool_calls":
        as_function = pl.struct(
            id=e.struct.field("id"),
            type=pl.lit("function"),
            name=e.struct.field("name"),
            arguments=e.struct.field("arguments"),
        )
        executed = pl.col("tool_calls").list.first().struct.field("arguments")
        return messages.with_columns(
            content=pl.when(text_call)
            .then(without_action(pl.when(text_call).then(pl.col("content")), executed))
            .otherwise("content"),
            tool_calls=pl.when(text_call).then(pl.col("tool_calls").list.eval(as_function)).otherwise("tool_calls"),
        )
    run = _run_key(messages)
    answers = (
        messages.filter(text_call)
        .select(*run, tool_call_id=pl.col("tool_calls").list.eval(e.struct.field("id")))
        .explode("tool_call_id")
        .with_columns(harness_turn=pl.lit(True))
    )
    observation = pl.col("harness_turn").fill_null(False) & (pl.col("role") == "tool")
    return (
        messages.join(answers, on=[*run, "tool_call_id"], how="left", maintain_order="left")
        .with_columns(
            role=pl.when(observation).then(pl.lit("user")).otherwise("role"),
            tool_call_id=pl.when(observation).then(None).otherwise("tool_call_id"),
            name=pl.when(observation).then(None).otherwise("name"),
            tool_calls=pl.when(text_call).then(pl.col("tool_calls").list.head(0)).otherwise("tool_calls"),
        )
        .drop("harness_turn")
    )


def text_protocol_runs(messages: pl.DataFrame) -> pl.DataFrame:
    """The runs (their key columns) of `messages` (curated rows, calls not yet formatted) that act in text."""
    run = _run_key(messages)
    return messages.filter(_is_text_call(pl.col("tool_calls"))).select(run).unique(maintain_order=True)


def published_tools(tools: pl.Expr, text_protocol: pl.Expr, action_format: str) -> pl.Expr:
    """A run's published tool list (OpenAI function schemas as JSON text): none for a text-protocol run published
    `native`, whose agent saw no tool schema."""
    if action_format == "tool_calls":
        return tools
    return pl.when(text_protocol.fill_null(False)).then(pl.lit(NO_TOOLS)).otherwise(tools)
