"""RL data: verl-style task rows from validated task packages, and group-relative rollout rewards.

Rollout rewards per group (group_id, or task): the raw score; per-check rewards; the GRPO advantage
(r - mean) / (std + eps) of the scores; the GDPO advantage (each check normalised within the group,
then summed with its weight); zero-variance groups marked as carrying no signal; and for each check
the assistant turn at which the run first satisfied it (for turn-level credit). std is the sample
standard deviation (n - 1), as in verl's GRPO; a group of one has std 0.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec
import polars as pl
import yaml

from cowork_assets.datasets.split import split_expr
from cowork_assets.sandbox import SANDBOX_KEY
from cowork_assets.synthetic.workspace import SIMULATED, simulated
from cowork_assets.tool_lists import named_tools

AGENT_NAME = "tool_agent"  # verl's multi-turn agent loop that executes tool calls
TOOL_CLASS = "cowork_assets.trainers.verl.WorkspaceTool"
# reward_model.style of a coding task: graded by running its tests in a sandbox; ground_truth is what the sandbox
# needs (instance id, repository, base commit, problem statement, FAIL_TO_PASS / PASS_TO_PASS when the log has them)
SANDBOX = "sandbox"

CHECK = pl.Struct(
    {
        "check_id": pl.String,
        "type": pl.String,
        "weight": pl.Float64,
        "reward": pl.Float64,
        "normalized": pl.Float64,
        "first_turn": pl.Int32,
    }
)
ROLLOUT_SCHEMA = pl.Schema(
    {  # a rollout's columns beside its checks
        "trajectory_id": pl.String,
        "task_id": pl.String,
        "group": pl.String,
        "batch": pl.String,
        "score": pl.Float64,
        "group_size": pl.Int64,
        "group_mean": pl.Float64,
        "group_std": pl.Float64,
        "zero_variance": pl.Boolean,
        "grpo_advantage": pl.Float64,
        "gdpo_advantage": pl.Float64,
    }
)


_STATE = msgspec.json.Decoder(dict[str, msgspec.Raw])  # the top level only: each slice stays raw JSON
_ENCODE = msgspec.json.Encoder().encode


def tools_kwargs(tools_json: str, state_json: str) -> str:
    """Per tool, the slice of initial state it needs: the state entry named after the tool's service.

    The slices are copied as written (compact JSON, from ingest) instead of parsed and re-encoded."""
    try:
        state = _STATE.decode(state_json)
    except msgspec.ValidationError:  # not an object: no slices
        state = {}
    out = {}
    for tool in named_tools(tools_json):
        service = tool["name"].split("_")[0]
        out[tool["name"]] = {"create_kwargs": {service: state[service]} if service in state else {}}
    return _ENCODE(out).decode()


def verl_tool_config(tool_names: Iterable[str]) -> str:
    """verl's tool config (YAML, for `actor_rollout_ref.rollout.multi_turn.tool_config_path`): each simulated
    tool among `tool_names` with its OpenAI schema, answered by the workspace simulation (`TOOL_CLASS`)."""
    tools = [
        {
            "class_name": TOOL_CLASS,
            "config": {"type": "native"},
            "tool_schema": {
                "type": "function",
                "function": {k: SIMULATED[name][k] for k in ("name", "description", "parameters")},
            },
        }
        for name in sorted(set(tool_names) & SIMULATED.keys())
    ]
    return yaml.safe_dump({"tools": tools}, sort_keys=False)


def _sandbox(states: pl.Series) -> pl.Series:
    """Each initial state's `sandbox` entry as JSON text (null: none). Only the states that name one are parsed:
    parsing all 18,534 tasks' states of the 80,000-run bench corpus took 0.57 s, the screen 0.02 s."""
    named = states.str.contains(SANDBOX_KEY, literal=True).fill_null(False)
    found = states.filter(named).str.json_path_match("$.sandbox")
    return pl.repeat(None, len(states), dtype=pl.String, eager=True).alias("sandbox").scatter(named.arg_true(), found)


def build_rl_tasks(
    packages: pl.DataFrame,
    systems: pl.DataFrame,
    pass_rates: pl.DataFrame,
    validation_fraction: float,
    training_side: pl.Series | None = None,
    data_source: str = "cowork",
) -> pl.DataFrame:
    """`packages`: task packages to publish (one per task), each with its `index` in the published order;
    `systems`: task_id -> system prompt; `training_side`: tasks that always land in `train`."""
    p = packages.join(systems, on="task_id", how="left", maintain_order="left").join(
        pass_rates, on="task_id", how="left", maintain_order="left"
    )
    # A slice at a time: the kwargs are the largest column (a service's state copied for each of its
    # tools), and a list of them all as Python strings would hold them a second time.
    kwargs = pl.concat(
        [
            pl.Series(dtype=pl.String),
            *(
                pl.Series([tools_kwargs(t, s) for t, s in zip(part["tools"], part["initial_state"])], dtype=pl.String)
                for part in p.iter_slices(2000)
            ),
        ],
        rechunk=False,
    )
    distinct = p["tools"].unique()  # a few dozen tool lists
    lists = pl.DataFrame(
        {
            "tools": distinct,
            "tool_selection": [[t["name"] for t in named_tools(t)] for t in distinct],
            "tools_simulated": [simulated(list(named_tools(t))) for t in distinct],
        },
        schema={"tools": pl.String, "tool_selection": pl.List(pl.String), "tools_simulated": pl.Boolean},
    )
    p = p.with_columns(tools_kwargs=kwargs, sandbox=_sandbox(p["initial_state"])).join(
        lists, on="tools", how="left", maintain_order="left"
    )
    sandbox = pl.col("sandbox")  # a coding task: graded by its tests
    return p.select(
        data_source=pl.lit(data_source),
        agent_name=pl.lit(AGENT_NAME),
        prompt=pl.concat_list(
            pl.struct(role=pl.lit("system"), content=pl.col("system").fill_null("")),
            pl.struct(role=pl.lit("user"), content=pl.col("request")),
        ),
        ability=pl.col("category"),
        reward_model=pl.struct(
            style=pl.when(sandbox.is_not_null()).then(pl.lit(SANDBOX)).otherwise(pl.lit("rule")),
            ground_truth=pl.coalesce(sandbox, pl.col("checks")),
        ),
        extra_info=pl.struct(
            split=split_expr(pl.col("task_id"), validation_fraction, training_side),
            index=pl.col("index").cast(pl.Int64),
            task_id="task_id",
            need_tools_kwargs=pl.lit(True),
            tools_kwargs="tools_kwargs",
            tool_selection="tool_selection",
            tools_simulated="tools_simulated",
            interaction_kwargs=pl.struct(name=pl.lit("cowork_checks"), task_id="task_id", query="request"),
            teacher_pass_rate=pl.col("pass_rate"),
            difficulty=1 - pl.col("pass_rate"),
        ),
    )


def _mean_std(x: pl.Expr, sample: bool) -> tuple[pl.Expr, pl.Expr]:
    """A group's mean and standard deviation (sample: n - 1; a group of one has std 0), as plain sums."""
    n = pl.len()
    mean = x.sum() / n
    var = ((x - mean) ** 2).sum() / (n - 1 if sample else n)
    return mean, pl.when(n < 2).then(0.0).otherwise(var.sqrt())


def group_rewards(rollouts: pl.DataFrame, checks: pl.DataFrame, eps: float, sample_std: bool = True) -> pl.DataFrame:
    """Advantages within each group. `rollouts`: row, group, score (and any other columns, kept);
    `checks`: row, check_id, type, weight, reward, first_turn, in each rollout's check order.
    Returns the rollouts with group_size, group_mean, group_std, zero_variance, grpo_advantage,
    gdpo_advantage and their checks (a list of CHECK, each normalised within its group)."""
    mean, std = _mean_std(pl.col("score"), sample_std)
    groups = rollouts.group_by("group").agg(group_size=pl.len().cast(pl.Int64), group_mean=mean, group_std=std)
    checks = checks.join(rollouts.select("row", "group"), on="row", maintain_order="left")
    c_mean, c_std = _mean_std(pl.col("reward"), sample_std)
    # Each rollout counts once per check id (a task may repeat an id).
    stats = checks.unique(["row", "check_id"]).group_by("group", "check_id").agg(c_mean=c_mean, c_std=c_std)
    checks = checks.join(stats, on=["group", "check_id"], maintain_order="left").with_columns(
        normalized=pl.when(pl.col("c_std") > 0)
        .then((pl.col("reward") - pl.col("c_mean")) / (pl.col("c_std") + eps))
        .otherwise(0.0)
    )
    per_rollout = checks.group_by("row", maintain_order=True).agg(
        checks=pl.struct(*CHECK.to_schema()), gdpo_advantage=(pl.col("weight") * pl.col("normalized")).sum()
    )
    return (
        rollouts.join(groups, on="group", maintain_order="left")
        .join(per_rollout, on="row", how="left", maintain_order="left")
        .with_columns(
            zero_variance=pl.col("group_std") == 0.0,
            grpo_advantage=pl.when(pl.col("group_std") > 0)
            .then((pl.col("score") - pl.col("group_mean")) / (pl.col("group_std") + eps))
            .otherwise(0.0),
            gdpo_advantage=pl.col("gdpo_advantage").fill_null(0.0),
            checks=pl.col("checks").fill_null(pl.lit([], dtype=pl.List(CHECK))),
        )
    )


def build_rl_rollouts(
    runs: pl.DataFrame, replayed: pl.DataFrame, rl_group_by: str, rl_advantage_epsilon: float, rl_std: str
) -> pl.DataFrame:
    """`runs`: trajectories rows of the rollouts (batch, trajectory_id, task_id, group_id, grade_score);
    `replayed`: their `regrade` rows (batch, trajectory_id, checks), which replayed each run's checks on
    its transcript: per check the recorded result (its reward) and the turn it was first met."""
    rollouts = runs.select(
        "trajectory_id",
        "task_id",
        group=pl.col("group_id").fill_null(pl.col("task_id")) if rl_group_by == "group_id" else pl.col("task_id"),
        batch="batch",
        score=pl.col("grade_score").cast(pl.Float64).fill_null(0.0),
    ).with_row_index("row")
    checks = (
        rollouts.select("row", "batch", "trajectory_id")
        .join(replayed.select("batch", "trajectory_id", "checks"), on=["batch", "trajectory_id"], maintain_order="left")
        .explode("checks", empty_as_null=False)
        .unnest("checks")
        .select(
            "row",
            "check_id",
            "type",
            "weight",
            reward=pl.col("recorded").fill_null(False).cast(pl.Float64),
            first_turn="first_turn",
        )
    )
    names = list(ROLLOUT_SCHEMA)
    return (
        group_rewards(rollouts, checks, rl_advantage_epsilon, rl_std == "sample")
        .select(*names[:5], "checks", *names[5:])
        .cast(ROLLOUT_SCHEMA)
        .rename({"group": "group_id"})
        .sort("group_id", "trajectory_id")
    )
