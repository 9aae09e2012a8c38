"""The preference dataset: pairs of runs of one task and prompt (`selection/preference.py`), in TRL's conversational
preference format, and its unpaired (KTO) form.

A pair's `prompt` is the messages both runs share from the start (at least the system prompt and the request: the
runs were paired on it), `chosen` and `rejected` the rest of each run, in the published form (`chat_form`: the
messages of `sft_dataset`, redacted, rendering under the official chat templates). `tools`: the chosen run's
published tool list.
"""

from __future__ import annotations

import orjson
import polars as pl

from cowork_assets.datasets.sft import MESSAGE
from cowork_assets.datasets.split import split_expr

MESSAGES = pl.List(MESSAGE)
SIDE = ["batch", "trajectory_id", "raw_file", "raw_record", "grade_score", "grade_checks"]


def split_at_shared_prefix(chosen: pl.Series, rejected: pl.Series) -> pl.DataFrame:
    """prompt, chosen, rejected: each pair's messages up to where the two runs first differ, and each run's rest. Two
    messages are the same when every field is (their JSON forms are equal)."""
    pairs = pl.DataFrame({"a": chosen, "b": rejected}).with_row_index("row")
    both = pl.min_horizontal(pl.col("a").list.len(), pl.col("b").list.len())
    aligned = (
        pairs.select("row", a=pl.col("a").list.head(both), b=pl.col("b").list.head(both))
        .explode("a", "b")
        .with_columns(i=pl.int_range(pl.len()).over("row"))
        .filter(pl.col("a").struct.json_encode() != pl.col("b").struct.json_encode())
        .group_by("row")
        .agg(first=pl.col("i").min())
    )
    shared = pl.col("first").fill_null(both)
    return pairs.join(aligned, on="row", how="left", maintain_order="left").select(
        prompt=pl.col("a").list.head(shared),
        chosen=pl.col("a").list.slice(shared),
        rejected=pl.col("b").list.slice(shared),
    )


def failed_checks(grade_checks: str | None) -> str:
    """The checks a run's recorded grade says it failed (the rejected side's reason)."""
    try:
        checks = orjson.loads(grade_checks) if grade_checks else {}
    except orjson.JSONDecodeError:
        checks = {}
    failed = sorted(k for k, v in checks.items() if v is False) if isinstance(checks, dict) else []
    return ("failed: " + ", ".join(failed)) if failed else "did not pass (its grade names no failed check)"


def build_pairs(
    pairs: pl.DataFrame,
    runs: pl.DataFrame,
    samples: pl.DataFrame,
    validation_fraction: float,
    training_side: pl.Series | None,
) -> pl.DataFrame:
    """The dataset's rows. `pairs`: task_id, chosen_batch, chosen_id, rejected_batch, rejected_id, margin;
    `runs`: the trajectories rows of both sides (with category); `samples`: batch, trajectory_id, messages, tools, chars
    of each side as published (`sft.chat_messages`, `sft.build_sft`'s tools). A pair whose runs share no prompt (which
    pairing on it rules out) is left out."""
    side = runs.join(samples, on=["batch", "trajectory_id"])
    chosen = side.select(*SIDE, "category", "messages", "tools", "chars").rename(lambda c: f"chosen_{c}")
    rejected = side.select(*SIDE, "messages", "chars").rename(lambda c: f"rejected_{c}")
    joined = pairs.join(
        chosen, left_on=["chosen_batch", "chosen_id"], right_on=["chosen_batch", "chosen_trajectory_id"]
    ).join(rejected, left_on=["rejected_batch", "rejected_id"], right_on=["rejected_batch", "rejected_trajectory_id"])
    parts = split_at_shared_prefix(joined["chosen_messages"], joined["rejected_messages"])
    rows = pl.concat([joined, parts], how="horizontal").filter(
        pl.col("prompt").list.eval(pl.element().struct.field("role") == "user").list.any(),
        pl.col("chosen").list.len() > 0,
        pl.col("rejected").list.len() > 0,
    )
    reason = pl.col("rejected_grade_checks").map_elements(failed_checks, return_dtype=pl.String)
    return rows.select(
        pair_id=pl.format("{}>{}", "chosen_id", "rejected_id"),
        prompt="prompt",
        chosen="chosen",
        rejected="rejected",
        tools="chosen_tools",
        task_id="task_id",
        category="chosen_category",
        margin="margin",
        chosen_score="chosen_grade_score",
        rejected_score="rejected_grade_score",
        rejected_reason=reason,
        chars=pl.col("chosen_chars") + pl.col("rejected_chars"),
        split=split_expr(pl.col("task_id"), validation_fraction, training_side),
        chosen_batch="chosen_batch",
        chosen_trajectory_id="chosen_id",
        chosen_raw_file="chosen_raw_file",
        chosen_raw_record="chosen_raw_record",
        rejected_batch="rejected_batch",
        rejected_trajectory_id="rejected_id",
        rejected_raw_file="rejected_raw_file",
        rejected_raw_record="rejected_raw_record",
    ).sort("split", "task_id", "pair_id")


def kto_rows(pairs: pl.DataFrame) -> pl.DataFrame:
    """The unpaired form TRL's KTOTrainer reads: prompt, completion, label (True for a chosen side)."""
    common = ["pair_id", "task_id", "split"]
    return pl.concat(
        [
            pairs.select(
                *common, "prompt", completion="chosen", label=pl.lit(True), trajectory_id="chosen_trajectory_id"
            ),
            pairs.select(
                *common, "prompt", completion="rejected", label=pl.lit(False), trajectory_id="rejected_trajectory_id"
            ),
        ]
    ).unique("trajectory_id", keep="first", maintain_order=True)
