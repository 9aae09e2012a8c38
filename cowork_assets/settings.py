"""The one typed settings object, its fields grouped per stage. Every field has one documented default.

Plain pydantic, no Dagster: `Settings` is made of the stage groups, and `orchestration.resources.CurateSettings`
is the same fields as a Dagster resource, so the launchpad can override any field per run and the CLI maps
`--set NAME=VALUE` onto the same fields. A stage's logic takes its own group (`CurationSettings`, ...) and reads
each setting by the name a user sets it by.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from cowork_assets.check_types.db_match import FREE_TEXT_ARGUMENTS, READ_ONLY_TOOLS, StateRules
from cowork_assets.store.storage import is_remote, local_root, normalize_root
from cowork_assets.tokens import HELPER_MIN_TEXTS

DEFAULT_RAW_ROOT = "data/raw"
DEFAULT_DATA_ROOT = "data/curated"
# The budgets' key for every coding-agent category (the input formats say which categories those are): a resolved
# SWE-bench run is long (one `cat` of a file can return 800 KB), so their budget is a trainer's long context rather
# than a chat sample's size.
CODING = "coding"
# Upper bounds of the sizes (a typo of a few zeros is refused, not run): characters and tokens of a sample.
MAX_CHARS = 100_000_000
MAX_TOKENS = 10_000_000
# From this many batches, `cowork-curate run` starts its workers however small the batches: a batch run is seconds of
# Dagster's own work, which two processes do side by side (docs/performance.md, "What is left").
PARALLEL_FROM_BATCHES = 6
BATCHES_PER_RUN = 25
SETTLE_SECONDS = 5.0  # the documented default of settle_seconds; COWORK_SETTLE_SECONDS replaces it (0 in tests)
WAREHOUSE_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}\.duckdb")


def cron_problem(cron: str) -> str | None:
    """Why Dagster would refuse a cron string for a schedule, or None: the schedule is its only user."""
    import dagster as dg  # only to check a cron string given: importing the settings loads no Dagster

    try:
        dg.ScheduleDefinition(name="cron_check", cron_schedule=cron, job_name="cron_check")
    except dg.DagsterInvalidDefinitionError:
        return (
            f"{cron!r} is not a cron string Dagster accepts: five fields (minute hour day month weekday), "
            "e.g. '0 3 * * *', or @hourly / @daily / @weekly / @monthly"
        )
    return None


class Group(BaseModel):
    """A stage's settings: immutable, as Dagster's config is."""

    model_config = ConfigDict(frozen=True)


class StorageSettings(Group):
    """Where the raw batches are read and the outputs written."""

    raw_root: str = Field(
        default=DEFAULT_RAW_ROOT,
        description="Folder holding one sub-folder per raw batch: the files of the agents' logs, as their tools laid "
        "them out (docs/ingest.md).",
    )
    data_root: str = Field(
        default=DEFAULT_DATA_ROOT,
        description="Where Parquet tables (tables/<name>/batch=<batch>/) and publications go: a local folder "
        "or an object-store URI such as s3://bucket/prefix (credentials from the AWS environment).",
    )
    warehouse_file: str = Field(
        default="cowork.duckdb",
        description="DuckDB database file with a view per table: a plain file name ending in .duckdb, in the "
        "local root (data_root, or COWORK_WORK_DIR when data_root is an object store).",
    )

    @field_validator("warehouse_file")
    @classmethod
    def _warehouse_file(cls, value: str) -> str:
        if not WAREHOUSE_FILE.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a plain file name ending in .duckdb (it is written inside the data root, "
                "beside the tables and the published datasets, and nowhere else)"
            )
        return value


class RunSettings(Group):
    """How runs are executed: processes, chunks, the refresh schedule."""

    tokenizer_processes: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Processes counting tokens with tiktoken at once (threads would take turns: tiktoken "
        "holds the GIL). The SFT candidate's are all helpers: its own process builds a batch's samples while "
        "they count the next batch's tokens. A corpus of fewer than "
        f"{HELPER_MIN_TEXTS:,} messages is counted in one process, without helpers (each costs a start).",
    )
    refresh_cron: str = Field(
        default="0 3 * * *",
        description="When the daily_refresh schedule runs the cross-batch refresh (cron; COWORK_REFRESH_CRON for "
        "`dagster dev`). The schedule is off until switched on in the UI.",
    )
    max_concurrent: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Batches processed at once by `cowork-curate run` (one process each).",
    )
    batches_per_run: int = Field(
        default=BATCHES_PER_RUN,
        ge=1,
        le=1000,
        description="Consecutive batches one run processes, one after another, each its own partition (its tables, "
        "checks and manifest; a batch that fails is retried alone): a run's fixed cost is paid once for them. For "
        "`cowork-curate run` and the sensor (COWORK_BATCHES_PER_RUN for `dagster dev`); 1: a run per batch, for a run "
        "launcher that sends each run to a machine of its own.",
    )
    parallel_from_mb: float = Field(
        default=64,
        ge=0,
        description="`cowork-curate run` processes batches in worker processes (max_concurrent at once) when the "
        f"batches it processes hold at least this many MB of raw files, or are {PARALLEL_FROM_BATCHES} or more; "
        "fewer and smaller ones run one after another in its own process, which is faster than starting workers "
        "(each a few seconds of imports). 0: always workers; max_concurrent=1: never.",
    )
    settle_seconds: float = Field(
        default=float(os.environ.get("COWORK_SETTLE_SECONDS") or SETTLE_SECONDS),
        json_schema_extra={"documented_default": SETTLE_SECONDS},
        ge=0,
        le=86_400,
        description="A batch folder is read only once nothing in it has changed for this long (a copy in progress "
        "is not processed half-way): `cowork-curate run` waits for it, the new-batch sensor comes back for it. "
        "COWORK_SETTLE_SECONDS sets the default.",
    )
    batch_ready_marker: str = Field(
        default="",
        pattern=r"^[^/\\]*$",
        description="A file name (e.g. `_SUCCESS`): a batch folder is read only once this file is in it, as the "
        "tool that copies batches in writes it last. Empty: no marker needed.",
    )
    read_chunk_records: int = Field(
        default=2000,
        ge=1,
        le=1_000_000,
        description="Raw records parsed and written per chunk; bounds ingestion memory.",
    )
    max_record_bytes: int = Field(
        default=256 << 20,
        ge=1024,
        le=2 << 30,
        description="Largest raw record read (a line, or a JSON document): a longer one is quarantined as "
        "`too_large` without being read whole, so a batch's memory is bounded whatever its files hold.",
    )

    @field_validator("refresh_cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        if problem := cron_problem(value):
            raise ValueError(problem)
        return value


class CurationSettings(Group):
    """Stage curation: observation truncation, the sample budget, token counting."""

    token_encoding: Literal["o200k_base", "cl100k_base"] = Field(
        default="o200k_base",
        description="tiktoken encoding for token counts: one of the two bundled with the package.",
    )
    truncation_strategy: str = Field(
        default="evidence_aware",
        description="How long tool observations are cut, one of the strategies in truncation/strategies/: `head` "
        "keeps the first max_observation_chars, `tail` the last, `middle` both ends; `evidence_aware` spends the "
        "same allowance on windows around at-risk evidence first, then the head.",
    )
    max_observation_chars: int = Field(
        default=1000, ge=1, le=MAX_CHARS, description="Characters of an observation kept by truncation (the allowance)."
    )
    evidence_context_chars: int = Field(
        default=60,
        ge=0,
        le=100_000,
        description="Context kept on each side of an at-risk value, when the allowance permits.",
    )
    char_budget: int = Field(default=40000, ge=1, le=MAX_CHARS, description="Maximum characters of a curated sample.")
    token_budget: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TOKENS,
        description="Optional maximum tokens of a curated sample (none: no limit), counted as `tokens` is (tiktoken's, "
        "or the `tokenizer`'s rendering). Set it to the trainer's `max_length`, so no published sample is cut off "
        "in training.",
    )
    category_char_budgets: dict[str, int] = Field(
        default={CODING: 262_144},
        description="char_budget per task category, for the categories named (the others keep char_budget); the key "
        "`coding` is every coding-agent category (the input formats of coding agents say which: docs/ingest.md); "
        '`--set category_char_budgets=\'{"coding": 262144, "swe_agent": 524288}\'` replaces the whole mapping.',
    )
    category_token_budgets: dict[str, int] = Field(
        default={CODING: 65_536},
        description="token_budget per task category, for the categories named (the others keep token_budget), `coding` "
        "for every coding-agent category: tokens are counted during curation only for samples with a token budget.",
    )
    redact_secrets: bool = Field(
        default=True,
        description="Replace credentials (API keys, tokens, private keys, passwords in URLs, ...) in every published "
        "text by a typed placeholder, <REDACTED:kind> (docs/datasets.md, Secrets).",
    )
    secret_allowlist: list[str] = Field(
        default=[],
        description="Regular expressions of values that are not secrets (a documented example key): a found value "
        "they match in whole is kept.",
    )
    budget_policy: Literal["drop", "trim"] = Field(
        default="trim",
        description="Over budget: `drop` the sample, or `trim` the oldest observations down to their evidence "
        "windows and drop only if still over.",
    )
    tokenizer: str = Field(
        default="",
        description="A local Hugging Face tokenizer folder (tokenizer.json, and tokenizer_config.json with its "
        "chat_template, or chat_template.jinja), read offline: each published sample's `tokens` is then the length of "
        "its rendering by that chat template (tools included) in that tokenizer, and the token budget counts each "
        "message in it plus the template's markup of the whole sample. Empty: tiktoken's `token_encoding`.",
    )
    reasoning: Literal["keep", "drop"] = Field(
        default="keep",
        description="The teacher's reasoning (thinking blocks, reasoning items, `reasoning_content`) on assistant "
        "messages: `keep` publishes it in each message's `reasoning_content` (counted in lengths and budgets, never "
        "truncated), `drop` leaves it out of the curated messages and the datasets.",
    )
    action_format: Literal["native", "tool_calls"] = Field(
        default="native",
        description="How a text-protocol harness's action (mini-swe-agent, SWE-agent, SWE-smith: a shell block or an "
        "XML-style call in the assistant's text) is published, once: `native` as the agent wrote it, with the "
        "observation the user turn the harness sent and no tool call; `tool_calls` as a tool call, taken out of the "
        "text, the block the harness executed. Inside the pipeline it is a call either way (truncation and the "
        "evidence audit see its observation); the budget's `tokenizer` renders the sample in its published form.",
    )

    @field_validator("tokenizer")
    @classmethod
    def _tokenizer(cls, value: str) -> str:
        from cowork_assets.trainers.tokenizer import tokenizer_problem

        if value and (problem := tokenizer_problem(value)):
            raise ValueError(problem)
        return str(Path(value).expanduser().resolve()) if value else value

    @field_validator("category_char_budgets", "category_token_budgets")
    @classmethod
    def _budgets(cls, value: dict[str, int], info) -> dict[str, int]:
        top = MAX_CHARS if info.field_name == "category_char_budgets" else MAX_TOKENS
        bad = sorted(k for k, v in value.items() if not 1 <= v <= top)
        if bad:
            raise ValueError(f"budgets must be from 1 to {top} (categories {', '.join(bad)})")
        return value

    def char_budgets(self, coding: Collection[str]) -> dict[str, int]:
        """category -> char budget of every category with its own: those named, and the `coding` categories."""
        return _per_category(self.category_char_budgets, coding)

    def budgets(self, categories: pl.Series, coding: Collection[str]) -> pl.DataFrame:
        """category, char_budget, token_budget (null: none) of each of `categories`; `coding`: the coding-agent
        categories (`ingest.formats.coding_categories()`), which the key `coding` budgets."""
        names = categories.unique().sort()
        chars, tokens = self.char_budgets(coding), _per_category(self.category_token_budgets, coding)
        return pl.DataFrame(
            {
                "category": names,
                "char_budget": [chars.get(c, self.char_budget) for c in names],
                "token_budget": [tokens.get(c, self.token_budget) for c in names],
            },
            schema={"category": pl.String, "char_budget": pl.Int64, "token_budget": pl.Int64},
        )

    @field_validator("secret_allowlist")
    @classmethod
    def _allowlist(cls, value: list[str]) -> list[str]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"secret_allowlist: {pattern!r} is not a regular expression ({exc})") from None
        return value

    @field_validator("truncation_strategy")
    @classmethod
    def _strategy(cls, value: str) -> str:
        from cowork_assets.truncation.strategies import strategy

        strategy(value)  # a ValueError naming the registered strategies
        return value


def _per_category(budgets: dict[str, int], coding: Collection[str]) -> dict[str, int]:
    """A budget mapping with its `coding` key spread over the coding categories (a category named wins)."""
    spread = {c: budgets[CODING] for c in coding} if CODING in budgets else {}
    return spread | {c: v for c, v in budgets.items() if c != CODING}


class CheckSettings(Group):
    """Thresholds of the curation and selection checks."""

    max_truncation_loss_rate: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Share of at-risk evidence of passing teacher runs that truncation may lose before the "
        "evidence_lost_to_truncation check errors.",
    )
    min_category_retention: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="The budget check errors when a category keeps less than this share of its passing samples.",
    )
    max_duplicate_rate: float = Field(
        default=0.2,
        ge=0.0,
        le=1.0,
        description="The duplicate_rate check warns when more than this share of teacher runs are duplicates.",
    )
    min_grader_agreement: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description="The grader_agreement check warns when replaying the checks disagrees with the recorded verdict "
        "on more than 1 - this share of the compared runs (1.0: on any run).",
    )


class SelectionSettings(Group):
    """Stage selection: deduplication and what reaches SFT."""

    near_dup_threshold: float = Field(
        default=0.9,
        gt=0.0,
        le=1.0,
        description="Jaccard similarity (word 3-grams of assistant text and actions) at which two runs of a task "
        "are near-duplicates.",
    )
    max_per_task: int = Field(
        default=4, ge=1, le=1_000_000, description="At most this many SFT samples per task (the best kept)."
    )
    accept_ungraded: bool = Field(
        default=False,
        description="Treat teacher runs without a grade (OpenAI chat or ATIF input) as passing demonstrations for SFT.",
    )
    lost_evidence_policy: Literal["drop", "flag"] = Field(
        default="drop",
        description="A passing sample that lost evidence to truncation: `drop` it from SFT, or `flag` it and keep it.",
    )
    preference_margin: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Least score by which a preference pair's chosen run beats its rejected run (`preference_pairs`).",
    )
    preference_max_per_task: int = Field(
        default=4, ge=1, le=1000, description="Preference pairs kept per task (`preference_pairs`)."
    )
    holdout: list[str] = Field(
        default=["tau2", "swebench"],
        description="Benchmark task lists whose test tasks never reach a dataset (nor does a run whose request "
        "contains one's text), and whose train tasks always land in `train`: shipped lists by name (`tau2`: "
        "tau2-bench's official airline and retail splits with their task texts; `swebench`: SWE-bench Verified's "
        "and Lite's test instances) and paths of list files or folders (docs/datasets.md, Holdouts); `[]` for none.",
    )
    holdout_overlap: float = Field(
        default=0.3,
        gt=0.0,
        le=1.0,
        description="Share of a held-out task's word 13-grams (its own text, not a harness's) that a task's request "
        "must contain to be held out too: a test task under another id.",
    )

    @field_validator("holdout")
    @classmethod
    def _holdout(cls, value: list[str]) -> list[str]:
        from cowork_assets.holdouts import load

        load(value)  # a HoldoutError (a ValueError) naming the list that cannot be read
        return value


class GradeSettings(Group):
    """How state-graded benchmarks (tau-bench, tau2) are re-graded: which tools change the state they compare.
    Read when a batch is ingested: they shape its `db_match` checks (check_types/db_match.py)."""

    read_only_tools: list[str] = Field(
        default=list(READ_ONLY_TOOLS),
        description="Tools that change no state, whatever their name: a run need not make the reference's calls "
        "of them, and its own calls of them are not extra writes.",
    )
    state_changing_tools: list[str] = Field(
        default=[],
        description="Tools that change state although their definition or name says otherwise (a read verb such as "
        "get_ or check_ first, an HTTP GET endpoint, an MCP readOnlyHint).",
    )
    free_text_arguments: list[str] = Field(
        default=list(FREE_TEXT_ARGUMENTS),
        description="Arguments of a write that are free text and not compared with the reference's (unless the "
        "tool's schema restricts the argument to an enum).",
    )

    def state_rules(self) -> StateRules:
        return StateRules(
            tuple(self.read_only_tools), tuple(self.state_changing_tools), tuple(self.free_text_arguments)
        )


class DatasetSettings(Group):
    """Stage datasets: the split and the RL rollout rewards."""

    publish_without_failed_batches: bool = Field(
        default=False,
        description="While a batch's last run failed (its files could not be read, a step failed), nothing is "
        "published: `cowork-curate run` and the corpus-refresh sensor do not refresh the corpus, and a launched "
        "publication fails saying why; true publishes the other batches.",
    )

    publish_despite_failed_checks: bool = Field(
        default=False,
        description="While a processed batch's run failed an ERROR-severity check (records not accounted for, "
        "evidence lost to truncation, ...), nothing is published: true publishes it as it is, and the card names "
        "each such batch and check.",
    )
    hold_back_refused_batches: bool = Field(
        default=False,
        description="While a batch's run failed an ERROR-severity check, true publishes the other batches and "
        "leaves that batch's runs out of every dataset (criterion `batch` in exclusions), naming it and its checks in "
        "the cards and the run's summary; false (the default) publishes nothing until the cause is fixed, since a "
        "check that fails on one batch for a setting (a truncation too tight) usually holds for the others.",
    )
    max_shrink: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="A new version that has lost more than this share of the current version's rows (or all of them) "
        "is not published: the run fails saying so. 1 publishes any shrink, even to no rows.",
    )
    validation_fraction: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="Share of tasks (not samples) whose data goes to the validation split.",
    )
    rl_rollout_role: Literal["student", "teacher", "all"] = Field(
        default="student",
        description="Which trajectories rl_rollouts processes: student rollouts, teacher runs, or all.",
    )
    rl_group_by: Literal["group_id", "task"] = Field(
        default="group_id",
        description="Group rollouts by their group_id (falling back to the task), or by task.",
    )
    rl_advantage_epsilon: float = Field(default=1e-6, gt=0.0, description="eps in (r - mean) / (std + eps).")
    rl_std: Literal["sample", "population"] = Field(
        default="sample",
        description="Standard deviation used for group normalisation (sample: n - 1, as verl).",
    )


# Fields are listed group by group, StorageSettings first (pydantic collects the bases' fields in reverse order).
class Settings(
    DatasetSettings,
    SelectionSettings,
    GradeSettings,
    CheckSettings,
    CurationSettings,
    RunSettings,
    StorageSettings,
):
    """Settings of the cowork-curate pipeline: every stage's group in one object."""

    def content(self) -> dict:
        """The settings that shape outputs (where files live is not one of them)."""
        return {k: v for k, v in self.model_dump().items() if k not in ("raw_root", "data_root", "warehouse_file")}

    def batch_content(self) -> dict:
        """The settings that shape a batch's tables or its checks' verdicts: a batch processed with others is redone
        (settings read only across batches, such as the split, the holdout or max_shrink, are not among them)."""
        return {k: v for k, v in self.content().items() if k not in CROSS_BATCH_ONLY}

    @property
    def raw_path(self) -> Path:
        return Path(self.raw_root).expanduser().resolve()

    @property
    def root(self) -> str:
        """The data root: an absolute local path or an object-store URI."""
        return normalize_root(self.data_root)

    @property
    def local_root(self) -> Path:
        return local_root(self.data_root)

    @property
    def warehouse_path(self) -> Path:
        return self.local_root / self.warehouse_file


CROSS_BATCH_ONLY = frozenset(
    {*DatasetSettings.model_fields, *RunSettings.model_fields, *SelectionSettings.model_fields}
    - {"max_record_bytes", "accept_ungraded"}
)


class SettingsError(ValueError):
    pass


REMOTE_SCHEMES = ("s3", "gs", "gcs")  # what pyarrow's object-store file systems read


def roots_problem(raw_root: str, data_root: str) -> str | None:
    """Why these raw and data roots cannot be used together, or None: checked before any work."""
    if not raw_root.strip():
        return "--raw-root is empty (it would mean the current folder): name the folder of the batches"
    raw = Path(raw_root).expanduser().resolve()
    if raw == Path(raw.anchor):
        return f"--raw-root {raw_root} is the filesystem root: every system folder would be a batch"
    if is_remote(data_root):
        scheme = data_root.split("://", 1)[0]
        if scheme not in (*REMOTE_SCHEMES, "file"):
            return (
                f"--data-root {data_root}: {scheme}:// is not an object store this reads ({', '.join(REMOTE_SCHEMES)})"
            )
        if scheme != "file":
            return None
    if not data_root.strip():
        return "--data-root is empty: name the folder the tables and datasets go to"
    data = Path(normalize_root(data_root))
    if data == raw or data.is_relative_to(raw) or raw.is_relative_to(data):
        return f"--data-root {data} and --raw-root {raw} overlap: the outputs would be read as raw batches"
    if data.exists() and not data.is_dir():
        return f"--data-root {data} exists and is not a folder"
    existing = next(p for p in (data, *data.parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        return f"--data-root {data}: {existing} is not a folder this process can write in"
    return None


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """Turn `NAME=VALUE` strings into typed setting values, with clear errors."""
    fields = Settings.model_fields
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise SettingsError(f"--set expects NAME=VALUE, got {pair!r}")
        if name not in fields:
            raise SettingsError(f"unknown setting {name!r}; known settings: {', '.join(sorted(fields))}")
        if raw.strip().lower() in ("none", "null") and not fields[name].is_required() and fields[name].default is None:
            out[name] = None
            continue
        try:
            adapter = TypeAdapter(fields[name].annotation)
            if raw.lstrip().startswith(("{", "[")):
                out[name] = adapter.validate_json(raw)
            elif getattr(fields[name].annotation, "__origin__", None) is list:  # a, b, c
                out[name] = adapter.validate_python([v.strip() for v in raw.split(",") if v.strip()])
            else:
                out[name] = adapter.validate_strings(raw)
        except ValidationError as exc:
            raise SettingsError(f"bad value for {name}: {exc.errors()[0]['msg']} (got {raw!r})") from None
    try:
        Settings(**out)  # run field constraints (ge=1, ...) now, not mid-run
    except ValidationError as exc:
        err = exc.errors()[0]
        raise SettingsError(f"bad value for {err['loc'][0]}: {err['msg'].removeprefix('Value error, ')}") from None
    return out
