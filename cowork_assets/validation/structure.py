"""Structural defects of samples, found columnar over messages and tool calls.

Only the per-call argument checks (JSON validity, fit to the tool's parameter schema) and the
tokenizer round trip (for the few texts that contain special-token strings) run in Python.
"""

from __future__ import annotations

from functools import lru_cache

import orjson
import polars as pl

from cowork_assets.ingest.formats import terminal_calls
from cowork_assets.store.models import polars_schema
from cowork_assets.tokens import SPECIAL_TOKENS, get_encoding
from cowork_assets.tool_lists import named_tools
from cowork_assets.validation.json_schema import arguments_problem
from cowork_assets.validation.schemas import StructureFindings

CONTROL = r"[\x00-\x08\x0B\x0C\x0E-\x1F\x7F]"
SCHEMA = polars_schema(StructureFindings, without=("batch",))  # a batch's findings before it is named
# Not fatal: the SFT sample simply ends at the last assistant turn (after it: a simulated user's "###STOP###", the
# result of a coding agent's submit command), and a run may end on the call its harness ends runs with.
WARNINGS = {"ends_on_user_turn", "ends_on_tool_result", "ends_on_terminal_call"}
CALL_KEY = ["trajectory_id", "message_index", "call_id"]


def _finding(frame: pl.DataFrame, kind: str, detail: pl.Expr) -> pl.DataFrame:
    return frame.select(
        "trajectory_id",
        "message_index",
        kind=pl.lit(kind),
        severity=pl.lit("warning" if kind in WARNINGS else "error"),
        detail=detail,
    ).cast(SCHEMA)


def terminal(trajectories: pl.DataFrame, messages: pl.DataFrame, tool_calls: pl.DataFrame) -> pl.DataFrame:
    """The calls (CALL_KEY) of each run's last assistant turn that are its format's terminal calls
    (`formats.terminal_calls`): a terminal call anywhere else is a call like any other."""
    command = pl.col("arguments").str.json_path_match("$.command").fill_null("").str.strip_chars_start()
    last = messages.filter(pl.col("role") == "assistant").group_by("trajectory_id").agg(pl.col("message_index").max())
    return (
        tool_calls.select(*CALL_KEY, "tool_name", "arguments")
        .join(last, on=["trajectory_id", "message_index"])
        .join(trajectories.select("trajectory_id", "category"), on="trajectory_id")
        .join(terminal_calls(), on=["category", "tool_name"])
        .filter(pl.col("command_prefix").is_null() | command.str.starts_with(pl.col("command_prefix")))
        .select(CALL_KEY)
        .unique()
    )


def order_findings(messages: pl.DataFrame, terminal_keys: pl.DataFrame) -> list[pl.DataFrame]:
    """Message order a chat template would reject, and empty assistant turns. `terminal_keys`: `terminal`."""
    m = (
        messages.sort("trajectory_id", "message_index")
        .with_columns(
            calls=pl.col("tool_calls").list.len(),
            prev_role=pl.col("role").shift(1).over("trajectory_id"),
        )
        .with_columns(
            # The assistant turn a tool message answers: the last assistant message before it.
            owner=pl.when(pl.col("role") == "assistant")
            .then(pl.col("message_index"))
            .forward_fill()
            .over("trajectory_id"),
        )
    )
    owner_ids = m.filter(pl.col("calls") > 0).select(
        "trajectory_id", owner="message_index", ids=pl.col("tool_calls").list.eval(pl.element().struct.field("id"))
    )
    tools = m.filter(pl.col("role") == "tool").join(owner_ids, on=["trajectory_id", "owner"], how="left")
    # A result with no call id (ATIF makes the id optional) only has to follow an assistant turn.
    misplaced = tools.filter(
        ~pl.col("prev_role").is_in(["assistant", "tool"])
        | pl.col("tool_call_id").is_not_null()
        & (pl.col("ids").is_null() | ~pl.col("ids").list.contains(pl.col("tool_call_id")))
    )
    ends = m.select("trajectory_id", "message_index", "role", "calls")  # not the texts: they would be copied
    firsts = ends.filter(pl.col("role") != "system").group_by("trajectory_id").agg(pl.all().first())
    lasts = ends.group_by("trajectory_id").agg(pl.all().last())
    # A run that ends on calls: fine when each is its harness's terminal call (submit, finish, ...).
    terminals = terminal_keys.group_by("trajectory_id", "message_index").agg(terminal=pl.len())
    lasts = lasts.join(terminals, on=["trajectory_id", "message_index"], how="left").with_columns(
        ends_by_terminal_calls=(pl.col("calls") > 0) & (pl.col("terminal").fill_null(0) == pl.col("calls"))
    )
    empty = m.filter(
        pl.col("role") == "assistant", pl.col("calls") == 0, pl.col("content").fill_null("").str.strip_chars() == ""
    )
    return [
        _finding(
            misplaced,
            "tool_message_out_of_order",
            pl.format(
                "the tool message for call {} does not answer the assistant turn before it",
                pl.col("tool_call_id").fill_null("?"),
            ),
        ),
        _finding(
            firsts.filter(pl.col("role") != "user"),
            "does_not_start_with_user",
            pl.format(
                "does not start with a user message: the first message after the system prompt is from the {}", "role"
            ),
        ),
        _finding(
            lasts.filter(
                ~pl.col("role").is_in(["assistant", "user", "tool"])
                | (pl.col("calls") > 0) & ~pl.col("ends_by_terminal_calls")
            ),
            "does_not_end_with_assistant",
            pl.format(
                "does not end with an assistant message: it ends on a {} message{}",
                "role",
                pl.when(pl.col("calls") > 0).then(pl.lit(" with pending tool calls")).otherwise(pl.lit("")),
            ),
        ),
        _finding(
            lasts.filter(pl.col("role") == "user"),
            "ends_on_user_turn",
            pl.lit("a user turn follows the last answer: the SFT sample ends at the last assistant turn"),
        ),
        _finding(
            lasts.filter(pl.col("role") == "tool"),
            "ends_on_tool_result",
            pl.lit("tool results follow the last assistant turn: the SFT sample ends at the last assistant turn"),
        ),
        _finding(
            lasts.filter(pl.col("ends_by_terminal_calls")),
            "ends_on_terminal_call",
            pl.lit("the run ends on the call its harness ends runs with, which has no result"),
        ),
        _finding(empty, "empty_assistant_turn", pl.lit("an assistant turn has no text and no tool calls")),
    ]


def call_findings(
    messages: pl.DataFrame, tool_calls: pl.DataFrame, tools: pl.DataFrame, terminal_keys: pl.DataFrame
) -> list[pl.DataFrame]:
    """Calls never answered (but a terminal call, `terminal`), results with no call, and arguments that are not
    JSON or do not fit the schema."""
    # Calls of a turn answered by results without call ids count as answered: the results are the turn's.
    owners = (
        messages.sort("trajectory_id", "message_index")
        .with_columns(
            owner=pl.when(pl.col("role") == "assistant")
            .then(pl.col("message_index"))
            .forward_fill()
            .over("trajectory_id")
        )
        .filter(pl.col("role") == "tool", pl.col("tool_call_id").is_null())
        .select("trajectory_id", message_index="owner")
    )
    unanswered = (
        tool_calls.filter(pl.col("observation_index").is_null())
        .join(owners.unique(), on=["trajectory_id", "message_index"], how="anti", maintain_order="left")
        .join(terminal_keys, on=CALL_KEY, how="anti", maintain_order="left")
    )
    results = messages.filter(pl.col("role") == "tool", pl.col("tool_call_id").is_not_null()).select(
        "trajectory_id", "message_index", "tool_call_id"
    )
    earlier_calls = tool_calls.select("trajectory_id", call_at="message_index", tool_call_id="call_id")
    orphans = (
        results.join(earlier_calls, on=["trajectory_id", "tool_call_id"], how="left")
        .group_by("trajectory_id", "message_index", "tool_call_id")
        .agg(answered=(pl.col("call_at") < pl.col("message_index")).any())
        .filter(~pl.col("answered").fill_null(False))
    )
    rows = []
    calls = tool_calls.join(tools, on=["trajectory_id", "tool_name"], how="left")
    for tid, index, name, args, params in calls.select(
        "trajectory_id", "message_index", "tool_name", "arguments", "parameters"
    ).iter_rows():
        try:
            orjson.loads(args)
        except orjson.JSONDecodeError as exc:
            rows.append((tid, index, "invalid_arguments_json", "error", f"{name}: {exc}"))
            continue
        if params is not None and (problem := arguments_problem(params, args)):
            rows.append((tid, index, "arguments_schema_mismatch", "error", f"{name}: {problem}"))
    return [
        _finding(unanswered, "unanswered_call", pl.format("call {} to {} has no tool result", "call_id", "tool_name")),
        _finding(
            orphans,
            "orphan_result",
            pl.format("the tool result for {} answers no earlier call", pl.col("tool_call_id").fill_null("(no id)")),
        ),
        pl.DataFrame(rows, schema=SCHEMA, orient="row"),
    ]


def text_findings(messages: pl.DataFrame, encoding: str) -> list[pl.DataFrame]:
    """Control characters outside tool observations, and text the tokenizer will not encode and decode back
    unchanged."""
    text = pl.col("content").fill_null("")
    # tool observations are shown as a terminal shows them (curation/terminal.py): no control text survives there
    # (the role first: the search then reads only the other messages' text, under a tenth of a batch's bytes)
    control = messages.filter(pl.col("role") != "tool").filter(text.str.contains(CONTROL))
    specials = SPECIAL_TOKENS.get(encoding) or get_encoding(encoding).special_tokens_set  # unknown: a clear error
    special = messages.filter(text.str.contains_any(sorted(specials)))
    enc = get_encoding(encoding) if special.height else None  # its rank file loads only when needed
    failing = []
    for tid, index, content in special.select("trajectory_id", "message_index", "content").iter_rows():
        try:
            ok = enc.decode(enc.encode(content)) == content
            why = "does not decode back unchanged"
        except ValueError as exc:  # tiktoken refuses special-token text by default, as trainers do
            ok, why = False, str(exc).splitlines()[0][:160]
        if not ok:
            failing.append((tid, index, "tokenizer_round_trip", "error", why))
    return [
        _finding(control, "control_characters", pl.lit("the text holds ASCII control characters")),
        pl.DataFrame(failing, schema=SCHEMA, orient="row"),
    ]


@lru_cache(maxsize=1024)
def _parameters(tools_json: str) -> tuple[tuple[str, str], ...]:
    """(tool name, parameters JSON) of a tool list (cached, like the list itself)."""
    return tuple(
        (tool["name"], orjson.dumps(tool.get("parameters") or {}).decode()) for tool in named_tools(tools_json)
    )


def tools_per_trajectory(trajectories: pl.DataFrame, packages: pl.DataFrame) -> pl.DataFrame:
    """(trajectory_id, tool_name, parameters JSON) for every exposed tool of each trajectory's package."""
    rows = [
        (task_hash, name, params)
        for task_hash, tools in packages.select("task_hash", "tools").iter_rows()
        for name, params in _parameters(tools)
    ]
    per_task = pl.DataFrame(
        rows, schema={"task_hash": pl.String, "tool_name": pl.String, "parameters": pl.String}, orient="row"
    ).unique(["task_hash", "tool_name"], keep="first", maintain_order=True)
    return trajectories.select("trajectory_id", "task_hash").join(per_task, on="task_hash").drop("task_hash")


def find_structure_findings(
    batch: str,
    trajectories: pl.DataFrame,
    packages: pl.DataFrame,
    messages: pl.DataFrame,
    tool_calls: pl.DataFrame,
    encoding: str,
) -> pl.DataFrame:
    terminal_keys = terminal(trajectories, messages, tool_calls)
    frames = [
        *order_findings(messages, terminal_keys),
        *call_findings(messages, tool_calls, tools_per_trajectory(trajectories, packages), terminal_keys),
        *text_findings(messages, encoding),
    ]
    return (
        pl.concat(frames)
        .with_columns(batch=pl.lit(batch))
        .sort("trajectory_id", "message_index", "kind", nulls_last=True)
        .select(list(StructureFindings.to_schema().columns))
    )
