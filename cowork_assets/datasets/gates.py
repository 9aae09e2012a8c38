"""Quality gates: the pandera model and the Great Expectations suite of a published dataset.

The suites live in `expectations/<dataset>.json`. They run on a flat validation view of the dataset
(nested columns summarised into helper columns such as `n_bad_roles`), in a helper process that has
Great Expectations imported (see `suites`). A candidate is read a part at a time: the pandera model
checks each part, and the view (a few narrow columns) is built from every part, so the suite sees the
whole dataset. The model's one rule across rows, uniqueness, is also in each suite.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import orjson
import pandera.errors
import polars as pl

from cowork_assets.curation.secrets import Detector
from cowork_assets.datasets.schemas import PUBLISHED
from cowork_assets.datasets.suites import SuiteProcess
from cowork_assets.ingest.roles import ROLES
from cowork_assets.store.models import polars_schema
from cowork_assets.store.registry import published
from cowork_assets.store.storage import plain

MAX_MODEL_FAILURES = 20  # pandera failure cases reported, over all parts


def _is_tool_list(text: str | None) -> bool:
    """A JSON list of objects (malformed JSON is a failed expectation, not an error)."""
    try:
        tools = orjson.loads(text) if text is not None else None
    except orjson.JSONDecodeError:
        return False
    return isinstance(tools, list) and all(isinstance(t, dict) for t in tools)


def _leaves(part: pl.DataFrame) -> pl.DataFrame:
    """(row, text): every string of the `text` column, however deep in its lists and structs."""
    dtype = part.schema["text"]
    if isinstance(dtype, (pl.List, pl.Array)):
        return _leaves(part.explode("text"))
    if isinstance(dtype, pl.Struct):
        fields = [_leaves(part.select("row", text=pl.col("text").struct.field(f.name))) for f in dtype.fields]
        return pl.concat(fields) if fields else part.clear().cast({"text": pl.String})
    if dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum)):
        return part.filter(pl.col("text").is_not_null()).cast({"text": pl.String})
    return part.clear().cast({"text": pl.String})  # numbers and flags hold no secret


def secrets_found(frame: pl.DataFrame, columns: list[str], rules: dict) -> pl.Series:
    """Per row, the distinct secrets a scan of its published text finds (none when redaction is off:
    `redact_secrets`). Each string of a row, however deep in its lists and structs (a message's content, a call's
    arguments, a task's state), is a text of its own, read as `readable` gives it (JSON text: each value after its
    key); the screen's regular expression is linear in short texts but slows down many times over on a whole
    sample's text."""
    if not rules.get("redact_secrets") or frame.is_empty():
        return pl.Series("secrets", [0] * frame.height, dtype=pl.Int32)
    detector = Detector(tuple(rules.get("secret_allowlist") or ()))
    index = pl.int_range(pl.len(), dtype=pl.UInt32).alias("row")
    texts = pl.concat([_leaves(plain(frame.select(index, pl.col(column).alias("text")))) for column in columns])
    found: dict[int, set[str]] = {}
    for row, text in texts.filter(detector.candidates(texts["text"])).iter_rows():
        found.setdefault(row, set()).update(detector.find_written(text))
    return pl.Series("secrets", [len(found.get(i, ())) for i in range(frame.height)], dtype=pl.Int32)


def _held(rules: dict) -> pl.Series:
    return pl.Series(list(rules.get("held_out") or []), dtype=pl.String)


def _samples_view(frame: pl.DataFrame, rules: dict) -> pl.DataFrame:
    budget = pl.col("category").replace_strict(
        rules.get("category_char_budgets") or {}, default=rules["char_budget"], return_dtype=pl.Int64
    )
    roles = pl.col("messages").list.eval(pl.element().struct.field("role"))
    is_json = pl.col("tools").map_elements(_is_tool_list, return_dtype=pl.Boolean)
    distinct = frame.select("tools").unique().with_columns(tools_is_json=is_json)  # a few dozen tool lists
    return frame.join(distinct, on="tools", how="left", nulls_equal=True, maintain_order="left").select(
        "sample_id",
        "task_id",
        "trajectory_id",
        "split",
        "chars",
        "tokens",
        "score",
        "tools_is_json",
        budget_excess=pl.col("chars") - budget,
        n_messages=pl.col("messages").list.len(),
        n_bad_roles=roles.list.eval(~pl.element().is_in(ROLES)).list.sum(),
        last_role=roles.list.last(),
        held_out=pl.col("task_id").is_in(_held(rules).implode()),
        secrets=secrets_found(frame, ["messages", "tools"], rules),
    )


def _tasks_view(frame: pl.DataFrame, rules: dict) -> pl.DataFrame:
    info = pl.col("extra_info")
    return frame.select(
        "data_source",
        "ability",
        task_id=info.struct.field("task_id"),
        split=info.struct.field("split"),
        index=info.struct.field("index"),
        style=pl.col("reward_model").struct.field("style"),
        ground_truth_chars=pl.col("reward_model").struct.field("ground_truth").str.len_chars(),
        pass_rate=info.struct.field("teacher_pass_rate"),
        n_prompt=pl.col("prompt").list.len(),
        held_out=info.struct.field("task_id").is_in(_held(rules).implode()),
        secrets=secrets_found(frame, ["prompt", "reward_model", "extra_info"], rules),
    )


def _rollouts_view(frame: pl.DataFrame, rules: dict) -> pl.DataFrame:
    return frame.select(
        "trajectory_id",
        "group_id",
        "score",
        "group_size",
        "zero_variance",
        "grpo_advantage",
        "gdpo_advantage",
        n_checks=pl.col("checks").list.len(),
        held_out=pl.col("task_id").is_in(_held(rules).implode()),
    )


def _pairs_view(frame: pl.DataFrame, rules: dict) -> pl.DataFrame:
    roles = lambda side: pl.col(side).list.eval(pl.element().struct.field("role"))  # noqa: E731
    return frame.select(
        "pair_id",
        "task_id",
        "split",
        "margin",
        prompt_requests=roles("prompt").list.eval(pl.element() == "user").list.sum(),
        chosen_last=roles("chosen").list.last(),
        rejected_last=roles("rejected").list.last(),
        one_run=pl.col("chosen_trajectory_id") == pl.col("rejected_trajectory_id"),
        held_out=pl.col("task_id").is_in(_held(rules).implode()),
        secrets=secrets_found(frame, ["prompt", "chosen", "rejected", "tools"], rules),
    )


# The flat columns a dataset's suite checks, by what its rows are: of one part, then across all parts. `rules`:
# char_budget and category_char_budgets (each sample's budget is its category's), held_out (task ids no dataset may
# hold), redact_secrets and secret_allowlist (whether a secret found in a row's text fails it).
VIEWS = {
    "samples": (_samples_view, lambda view: view.with_columns(task_splits=pl.col("split").n_unique().over("task_id"))),
    "tasks": (_tasks_view, lambda view: view),
    "rollouts": (_rollouts_view, lambda view: view),
    "pairs": (_pairs_view, lambda view: view.with_columns(task_splits=pl.col("split").n_unique().over("task_id"))),
}


def validation_view(dataset: str, parts: Iterable[pl.DataFrame], rules: dict) -> pl.DataFrame:
    """The flat columns the dataset's suite checks, of all its parts."""
    part_view, whole_view = VIEWS[PUBLISHED[dataset].rows]
    return whole_view(pl.concat([part_view(part, rules) for part in parts]))


def run_gate(dataset: str, parts: Iterable[pl.DataFrame], rules: dict, suites: SuiteProcess) -> tuple[bool, list[dict]]:
    """(passed, failures) for the pandera model and the GX suite (run by `suites`) of a dataset given as parts.
    `rules`: char_budget and category_char_budgets, the sample budgets the SFT lengths must keep; held_out, the
    benchmark tasks no dataset may hold."""
    model = published()[dataset].model
    failures: list[dict] = []

    def checked(part: pl.DataFrame) -> pl.DataFrame:
        try:
            model.validate(part, lazy=True)
        except pandera.errors.SchemaErrors as exc:
            cases = exc.failure_cases.head(MAX_MODEL_FAILURES - len(failures))
            failures.extend(
                {"expectation": f"pandera: {c}", "column": col, "unexpected": 1, "examples": str(v)[:200]}
                for c, col, v in zip(cases["check"], cases["column"], cases["failure_case"])
            )
        return part

    # a candidate with no rows still has its view checked: the suite says what an empty dataset breaks
    empty = pl.DataFrame(schema=polars_schema(model))
    view = validation_view(dataset, itertools.chain((checked(p) for p in parts), [empty]), rules)
    failures += suites.failures(dataset, view, {})
    return not failures, failures
