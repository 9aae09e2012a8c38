"""Quality gates: the pandera model and the Great Expectations suite of a published dataset.

The suites live in `expectations/<dataset>.json`. They run on a flat validation view of the dataset
(nested columns summarised into helper columns such as `n_bad_roles`), converted to pandas for GX.
Great Expectations is imported lazily: it takes seconds to import.
"""

from __future__ import annotations

import orjson
import pandera.errors
import polars as pl

from cowork_assets.datasets.schemas import MODELS
from cowork_assets.paths import project_dir

ROLES = ["system", "user", "assistant", "tool"]


def validation_view(dataset: str, frame: pl.DataFrame) -> pl.DataFrame:
    """The flat columns the dataset's suite checks."""
    if dataset == "sft_dataset":
        roles = pl.col("messages").list.eval(pl.element().struct.field("role"))
        is_json = pl.col("tools").str.json_decode(pl.List(pl.Struct({"type": pl.String}))).is_not_null()
        distinct = frame.select("tools").unique().with_columns(tools_is_json=is_json)  # a few dozen tool lists
        return frame.join(distinct, on="tools", how="left", nulls_equal=True, maintain_order="left").select(
            "sample_id", "task_id", "trajectory_id", "split", "chars", "tokens", "score", "tools_is_json",
            n_messages=pl.col("messages").list.len(),
            n_bad_roles=roles.list.eval(~pl.element().is_in(ROLES)).list.sum(),
            last_role=roles.list.last(),
            task_splits=pl.col("split").n_unique().over("task_id"),
        )
    if dataset == "rl_tasks":
        info = pl.col("extra_info")
        return frame.select(
            "data_source", "ability", task_id=info.struct.field("task_id"), split=info.struct.field("split"),
            index=info.struct.field("index"), style=pl.col("reward_model").struct.field("style"),
            ground_truth_chars=pl.col("reward_model").struct.field("ground_truth").str.len_chars(),
            pass_rate=info.struct.field("teacher_pass_rate"), n_prompt=pl.col("prompt").list.len(),
        )
    return frame.select("trajectory_id", "group_id", "score", "group_size", "zero_variance", "grpo_advantage",
                        "gdpo_advantage", n_checks=pl.col("checks").list.len())


def run_suite(dataset: str, frame: pl.DataFrame, parameters: dict) -> list[dict]:
    """Failed expectations of the dataset's GX suite: [{expectation, column, unexpected, examples}]."""
    import great_expectations as gx  # noqa: PLC0415 - slow import, only when a gate runs

    spec = orjson.loads((project_dir("expectations") / f"{dataset}.json").read_bytes())
    suite = gx.ExpectationSuite(name=spec["name"], expectations=[
        gx.expectations.registry.get_expectation_impl(e["type"])(**e["kwargs"]) for e in spec["expectations"]])
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = {"globally": False}
    batch = context.data_sources.add_pandas(dataset).add_dataframe_asset("published").add_batch_definition_whole_dataframe(
        "all").get_batch(batch_parameters={"dataframe": validation_view(dataset, frame).to_pandas()})
    result = batch.validate(suite, expectation_parameters=parameters)
    return [{"expectation": r.expectation_config.type, "column": r.expectation_config.kwargs.get("column", ""),
             "unexpected": r.result.get("unexpected_count", r.result.get("observed_value")),
             "examples": str(r.result.get("partial_unexpected_list", ""))[:200]}
            for r in result.results if not r.success]


def run_gate(dataset: str, frame: pl.DataFrame, parameters: dict) -> tuple[bool, list[dict]]:
    """(passed, failures) for the pandera model and the GX suite of a dataset."""
    failures = []
    try:
        MODELS[dataset].validate(frame, lazy=True)
    except pandera.errors.SchemaErrors as exc:
        cases = exc.failure_cases.head(20)
        failures += [{"expectation": f"pandera: {c}", "column": col, "unexpected": 1, "examples": str(v)[:200]}
                     for c, col, v in zip(cases["check"], cases["column"], cases["failure_case"])]
    failures += run_suite(dataset, frame, parameters)
    return not failures, failures
