"""The table registry: every table and dataset the pipeline writes, once, and its I/O.

For each: its name, pandera model, group (the pipeline stage it belongs to, a Dagster group), whether it is
partitioned (by batch or by task bucket), where it lives, its description and its inputs (the assets it is computed
from). A table knows its files and how to scan, read and write them (a sink that commits or aborts), locally or in an
object store; every stage, the warehouse's views, the content digests and the benchmark go through it. Asset
specs (orchestration/specs.py), the schema checks and the schema tests are derived from this list; adding a
table is one entry here plus the function that computes it. A misspelt name fails at once: `TABLES["x"]`
names the tables there are.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from typing import Literal

import pandera.polars as pa
import polars as pl

from cowork_assets.curation.schemas import (
    CuratedMessages,
    EvidenceAudit,
    EvidenceRollup,
    Redactions,
    SampleStats,
    TruncationSweep,
)
from cowork_assets.datasets.schemas import PreferencePairs, RlRollouts, RlTasks, SftDataset
from cowork_assets.evidence.schemas import Evidence
from cowork_assets.ingest.schemas import Messages, Quarantine, SkippedInputs, TaskPackages, ToolCalls, Trajectories
from cowork_assets.selection.schemas import DedupClusters, DedupSignatures, Exclusions
from cowork_assets.store import aside, storage, versions
from cowork_assets.store.buckets import BUCKETS
from cowork_assets.store.models import arrow_schema
from cowork_assets.validation.schemas import Regrade, StructureFindings, TaskFindings

# tables: <data_root>/tables/<name>/ (batch=<b>/ or bucket=<k>/data.parquet per part, else data.parquet); candidate: a
# dataset version awaiting its gate (store/versions.py); published: <data_root>/published/<name>/current/.
Location = Literal["tables", "candidate", "published"]
FILE_NAME = "data.parquet"
CORPUS_NOTE = "cowork:corpus"  # in a file's footer: the state of the corpus it was computed from


@dataclass(frozen=True, kw_only=True)  # entries name every field: no bare booleans by position
class Table:
    name: str
    model: type[pa.DataFrameModel]
    group: str
    description: str
    inputs: tuple[str, ...]
    location: Location = "tables"
    # A file per batch (`batch=<b>/`), per task bucket (`bucket=<k>/`, store/buckets.py) or one for the table
    partitioned_by: Literal["batch", "bucket"] | None = None
    also_in_view: tuple[str, ...] = ()  # more files of the table's folder its warehouse view reads

    @property
    def per_batch(self) -> bool:
        return self.partitioned_by == "batch"

    @property
    def per_bucket(self) -> bool:
        return self.partitioned_by == "bucket"

    # Where the rows are
    def folder(self, root: str) -> str:
        return storage.join(root, "tables", self.name)

    def file(self, root: str, part: str | None = None) -> str:
        """The file of a part: a batch's (while this process runs the batch, its file written aside) or a task bucket's;
        or the table's one file."""
        if self.per_batch and (folder := aside.folder(root, part)):
            return storage.join(folder, self.name, FILE_NAME)
        return self.committed_file(root, part)

    def committed_file(self, root: str, part: str | None = None) -> str:
        """Where a part's file is once its run finished (`tables/<name>/batch=<batch>/` or `bucket=<bucket>/`), or the
        table's one file."""
        if self.partitioned_by and part is None:
            raise ValueError(f"{self.name} is written per {self.partitioned_by}: name the {self.partitioned_by}")
        if self.location != "tables":
            raise ValueError(f"{self.name} is a dataset: its files are its version's (`sources`)")
        parts = [f"{self.partitioned_by}={part}"] if self.partitioned_by else []
        return storage.join(self.folder(root), *parts, FILE_NAME)

    def glob(self, root: str) -> str:
        """Every batch's (or bucket's) file of a partitioned table, as one pattern (the table's one file otherwise)."""
        if self.partitioned_by:
            return storage.join(self.folder(root), f"{self.partitioned_by}=*", FILE_NAME)
        return self.committed_file(root)

    def sources(self, root: str) -> list[str]:
        """What holds every row: the parts' files and the extra files beside them that exist, the table's file,
        or the Parquet files of a dataset's current version (a candidate's own, for a candidate)."""
        if self.location == "published":
            return [storage.join(versions.current_path(root, self.name), "*.parquet")]
        if self.location == "candidate":
            return versions.parquet_files(versions.candidate(root, self.dataset))
        extra = [storage.join(self.folder(root), f) for f in self.also_in_view]
        return [self.glob(root), *(f for f in extra if storage.exists(f))]

    @property
    def dataset(self) -> str:
        """The published dataset a candidate becomes (the one computed from it), or this table's name."""
        return next((t.name for t in REGISTRY if t.location == "published" and self.name in t.inputs), self.name)

    # Reading
    def scan(self, root: str, part: str | None = None) -> pl.LazyFrame:
        """A part's rows, or every row (all batches or buckets) when no part is named."""
        return pl.scan_parquet(self.file(root, part) if part is not None else self.sources(root))

    def read(self, root: str, part: str | None = None, columns: list[str] | None = None) -> pl.DataFrame:
        """A part's rows, or every row of the table."""
        if part is None and self.partitioned_by:
            return self.scan(root).select(columns or pl.all()).collect()
        return pl.read_parquet(self.file(root, part), columns=columns)

    def rows(self, root: str, part: str | None = None) -> int:
        """Rows of a part, or of the whole table, from the files' footers."""
        return storage.parquet_rows(self.file(root, part) if part is not None else self.sources(root))

    def rows_of_other_batches(self, root: str, batch: str) -> int:
        """Rows of every other batch's file: the one a run of it is writing aside if there is one (batches run side
        by side), else its file in `tables/`. Metadata only: a file moved or removed meanwhile counts as its other
        copy, or as none."""
        committed = {n.removeprefix("batch=") for n in storage.list_names(self.folder(root), directories=True)}
        in_progress = aside.in_progress(root)
        copies = [
            [
                *(storage.join(a, self.name, FILE_NAME) for a in in_progress.get(other, [])),
                self.committed_file(root, other),
            ]
            for other in sorted((committed | set(in_progress)) - {batch})
        ]
        # The settled batches' footers in one read (a read each made every batch run's metadata O(batches)); a file
        # gone meanwhile fails it, and each batch is then read on its own.
        settled = [files[0] for files in copies if len(files) == 1]
        with suppress(OSError, pl.exceptions.PolarsError):
            return storage.parquet_rows(settled) + sum(_first_rows(files) for files in copies if len(files) > 1)
        return sum(_first_rows(files) for files in copies)

    def chunks(self, root: str, batch: str, columns: list[str] | None = None) -> Iterator[pl.DataFrame]:
        """A per-trajectory table of a batch, whole trajectories a chunk at a time (`storage.trajectory_chunks`)."""
        return storage.trajectory_chunks(self.file(root, batch), columns)

    def read_keyed(self, root: str, keys: pl.DataFrame, key: str) -> pl.DataFrame:
        """The rows whose (batch, `key`) is in `keys`, in their order, a batch's file at a time."""
        return storage.read_keyed_rows(root, self, keys, key)

    def first_copies(self, root: str, key: str) -> Iterator[pl.DataFrame]:
        """The rows of each distinct `key` in the first batch that has it, a batch's rows at a time: each batch holds
        its own copy of a task's package, and a cross-batch step must not hold every batch's copies at once."""
        first = self.scan(root).select("batch", key).collect().unique(key, keep="first")
        return (self.read_keyed(root, keys, key) for keys in first.partition_by("batch"))

    def read_current(self, root: str, corpus: str, parts: Iterable[str] = BUCKETS) -> pl.DataFrame:
        """The rows of `parts` (task buckets), each computed from the corpus as it is now (`corpus`:
        `batch_state.corpus_version`): a bucket computed from another state of it, or never, is an error that
        names it. Rows a bucket kept from before a batch was added, redone or dropped would select wrongly."""
        if stale := self.stale_parts(root, corpus, parts):
            raise RuntimeError(
                f"{self.name}: task bucket(s) {', '.join(stale)} were not computed from the corpus as it is now (a "
                "batch was added, redone or dropped since, or they never were); materialize every bucket of it "
                "(the refresh_corpus job does) before what reads it"
            )
        return pl.concat([pl.read_parquet(self.committed_file(root, part)) for part in parts])

    def stale_parts(self, root: str, corpus: str, parts: Iterable[str] = BUCKETS) -> list[str]:
        """The parts (task buckets) not computed from the corpus as it is now (`corpus`), or never computed."""
        return [part for part in parts if _noted_corpus(self.committed_file(root, part)) != corpus]

    # Writing
    def write(self, frame: pl.DataFrame, root: str, part: str | None = None, corpus: str | None = None) -> str:
        """Write the table's (or a part's) file atomically, with the model's schema, noting the state of the corpus it
        was computed from (`corpus`, for `read_current`); its location."""
        notes = {CORPUS_NOTE: corpus} if corpus else None
        return storage.write_parquet_atomic(frame, self.file(root, part), arrow_schema(self.model), notes)

    def sink(self, root: str, part: str | None = None) -> storage.ParquetSink:
        """A sink for the table's (or a part's) file: frames streamed in, committed whole or aborted (as a
        context manager: committed when the block ends, aborted when it raises)."""
        return storage.ParquetSink(self.file(root, part), arrow_schema(self.model))


def _first_rows(files: list[str]) -> int:
    """Rows of the first of `files` there is (none: 0)."""
    for f in files:
        try:
            return storage.parquet_rows(f)
        except (OSError, pl.exceptions.PolarsError):  # not there (any more): its next copy
            continue
    return 0


def _noted_corpus(location: str) -> str | None:
    try:
        return storage.parquet_notes(location).get(CORPUS_NOTE)
    except OSError:  # no file
        return None


_RUN_TABLES = ("messages", "trajectories", "evidence")
_CURATION = "Computed together from the batch's messages, runs and evidence. "

REGISTRY: tuple[Table, ...] = (
    Table(
        name="trajectories",
        model=Trajectories,
        group="staging",
        partitioned_by="batch",
        description="One row per parsed trajectory: task, teacher, grade, "
        "counts, characters, and lineage (raw_file, raw_record = 1-based line).",
        inputs=("raw_batches",),
    ),
    Table(
        name="messages",
        model=Messages,
        group="staging",
        partitioned_by="batch",
        description="One row per message, tool calls normalised (arguments as JSON "
        "strings), with character counts (tokens are counted once, for the published samples).",
        inputs=("raw_batches",),
    ),
    Table(
        name="tool_calls",
        model=ToolCalls,
        group="staging",
        partitioned_by="batch",
        description="One row per tool call with the observation that answered it and its length.",
        inputs=("raw_batches",),
    ),
    Table(
        name="task_packages",
        model=TaskPackages,
        group="staging",
        partitioned_by="batch",
        description="One row per distinct task package (request, initial state, tools, checks) in the batch.",
        inputs=("raw_batches",),
    ),
    Table(
        name="quarantine",
        model=Quarantine,
        group="staging",
        partitioned_by="batch",
        description="Raw records that could not be parsed: file, 1-based record, reason, detail, excerpt.",
        inputs=("raw_batches",),
    ),
    Table(
        name="skipped_inputs",
        model=SkippedInputs,
        group="staging",
        partitioned_by="batch",
        description="Files and folders of the batch folder that no input "
        "format reads, with the reason (batch `_raw_root`: what the raw root holds that is not a batch).",
        inputs=("raw_batches",),
        also_in_view=("raw_root.parquet",),
    ),
    Table(
        name="evidence",
        model=Evidence,
        group="evidence",
        partitioned_by="batch",
        description="One row per evidence item: the values each trajectory's grader "
        "depends on (explicit, derived from checks, or grounding ids in tool-call arguments), where the agent "
        "first uses each, and where it was first seen: given (system/user), at_risk (a tool observation, with "
        "offset), produced, or unused.",
        inputs=("trajectories", "messages", "tool_calls", "task_packages"),
    ),
    Table(
        name="curated_messages",
        model=CuratedMessages,
        group="curation",
        partitioned_by="batch",
        description="Every message after observation truncation and "
        "the sample budget, with its original and kept length and the kept spans: what a trainer would see.",
        inputs=_RUN_TABLES,
    ),
    Table(
        name="sample_stats",
        model=SampleStats,
        group="curation",
        partitioned_by="batch",
        description="Per trajectory: characters and tokens before and after curation, characters under each truncation "
        "strategy, and the budget's verdict (kept / trimmed / dropped, or unrenderable by the `tokenizer`'s chat "
        "template) and reason.",
        inputs=_RUN_TABLES,
    ),
    Table(
        name="evidence_audit",
        model=EvidenceAudit,
        group="curation",
        partitioned_by="batch",
        description="Per evidence item: lost to truncation (under head, "
        "under evidence_aware, under the configured strategy) and lost to the budget.",
        inputs=_RUN_TABLES,
    ),
    Table(
        name="evidence_rollup",
        model=EvidenceRollup,
        group="curation",
        partitioned_by="batch",
        description="Per trajectory: evidence items, at-risk items, and how many were lost to truncation and to the "
        "budget, or were part of a redacted secret.",
        inputs=_RUN_TABLES,
    ),
    Table(
        name="redactions",
        model=Redactions,
        group="curation",
        partitioned_by="batch",
        description="Secrets replaced by typed placeholders (<REDACTED:kind>) in the curated messages: one row per "
        "message, field and kind, with a hash of the secret, never its text.",
        inputs=_RUN_TABLES,
    ),
    Table(
        name="truncation_sweep",
        model=TruncationSweep,
        group="curation",
        partitioned_by="batch",
        description="At-risk evidence lost per truncation strategy "
        "(head, tail, middle: verl's rollout-time sides; and evidence_aware) at allowances from 250 to 16,000 "
        "characters, per category: which allowance and side keep the evidence the graders depend on.",
        inputs=_RUN_TABLES,
    ),
    Table(
        name="structure_findings",
        model=StructureFindings,
        group="validation",
        partitioned_by="batch",
        description="Structural defects per sample: tool calls "
        "without a result and results without a call, arguments that are not JSON or do not fit the tool schema, "
        "message order a chat template would reject, empty assistant turns, control characters, text that does "
        "not survive a tokenizer round trip.",
        inputs=("trajectories", "task_packages", "messages", "tool_calls"),
    ),
    Table(
        name="regrade",
        model=Regrade,
        group="validation",
        partitioned_by="batch",
        description="Every run re-graded by replaying its task's checks on its "
        "transcript (cowork_assets/rewards.py): the recorded and the replayed verdict and score, per-check "
        "results, and why they differ.",
        inputs=("trajectories", "task_packages", "messages"),
    ),
    Table(
        name="task_findings",
        model=TaskFindings,
        group="validation",
        description="Inconsistent task packages across all batches: calls "
        "and checks naming tools the interface does not expose (closest one suggested), request counts that "
        "disagree with the grader, call-counting graders (re-graded from the runs), ids no state or run "
        "contains, invalid tool schemas, unknown check types.",
        inputs=("task_packages", "trajectories", "tool_calls", "regrade"),
    ),
    Table(
        name="dedup_signatures",
        model=DedupSignatures,
        group="selection",
        partitioned_by="batch",
        description="Per teacher run: content hash, shingle hashes and "
        "MinHash signature of the curated conversation, so cross-batch deduplication never needs the text.",
        inputs=("curated_messages", "trajectories", "sample_stats"),
    ),
    Table(
        name="dedup_clusters",
        model=DedupClusters,
        group="selection",
        partitioned_by="bucket",
        description="Duplicate clusters of teacher runs within each "
        "task, across all batches: exact (same normalised content) and near (MinHash LSH candidates verified by "
        "exact Jaccard >= near_dup_threshold). The best member (highest score, then fewest characters) is kept.",
        inputs=("dedup_signatures",),
    ),
    Table(
        name="exclusions",
        model=Exclusions,
        group="selection",
        partitioned_by="bucket",
        description="Why each trajectory is not in the SFT set: one row per (trajectory, criterion, reason) — "
        "holdout, role, grade, structure, task_consistency, evidence, budget, chat_template, dedup, then the per-task "
        "cap; why a run is in no preference pair (`dataset` = preference: a guard, its grade, pairing, cap); why a "
        "task is not in the RL tasks, and which rollouts are held out. Query it with "
        "`cowork-curate sql --query why_excluded --param trajectory_id=...`.",
        inputs=(
            "trajectories",
            "structure_findings",
            "task_findings",
            "evidence_rollup",
            "sample_stats",
            "dedup_clusters",
            "task_packages",
            "messages",
            "regrade",
        ),
    ),
    Table(
        name="sft_candidate",
        model=SftDataset,
        group="datasets",
        description="Candidate SFT dataset (not yet published): "
        "selected runs as messages + tools with metadata and lineage, split by task into train and validation.",
        inputs=("exclusions", "curated_messages", "sample_stats", "task_packages", "truncation_sweep"),
        location="candidate",
    ),
    Table(
        name="rl_tasks_candidate",
        model=RlTasks,
        group="datasets",
        description="Candidate verl-style RL task rows: one per "
        "validated, deduplicated task package; tasks with consistency errors are left out and recorded in "
        "exclusions.",
        inputs=("exclusions", "task_packages", "trajectories", "messages"),
        location="candidate",
    ),
    Table(
        name="rl_rollouts_candidate",
        model=RlRollouts,
        group="datasets",
        description="Candidate processed rollout rewards: per "
        "rollout the raw score, per-check rewards, GRPO and GDPO group-normalised advantages, zero-variance "
        "groups, and the turn each check was met (from regrade's replay); runs of held-out benchmark tasks are "
        "left out (exclusions).",
        inputs=("trajectories", "regrade", "task_packages"),
        location="candidate",
    ),
    Table(
        name="preference_candidate",
        model=PreferencePairs,
        group="datasets",
        description="Candidate preference pairs (not yet published): a passing and a failing run of one task and "
        "prompt, in TRL's conversational preference format; why a run is in no pair is in exclusions.",
        inputs=("exclusions", "trajectories", "curated_messages", "task_packages"),
        location="candidate",
    ),
    Table(
        name="sft_dataset",
        model=SftDataset,
        group="datasets",
        description="The published SFT dataset: the current version under "
        "<data_root>/published/sft_dataset/current/{train,validation}.parquet, with its card.",
        inputs=("sft_candidate",),
        location="published",
    ),
    Table(
        name="rl_tasks",
        model=RlTasks,
        group="datasets",
        description="The published verl-style RL task dataset: "
        "<data_root>/published/rl_tasks/current/{train,validation}.parquet, with its card.",
        inputs=("rl_tasks_candidate",),
        location="published",
    ),
    Table(
        name="preference_pairs",
        model=PreferencePairs,
        group="datasets",
        description="The published preference pairs (DPO; KTO through `export --format kto`): "
        "<data_root>/published/preference_pairs/current/{train,validation}.parquet, with its card.",
        inputs=("preference_candidate",),
        location="published",
    ),
    Table(
        name="rl_rollouts",
        model=RlRollouts,
        group="datasets",
        description="The published rollout rewards: <data_root>/published/rl_rollouts/current/rollouts.parquet, "
        "with its card.",
        inputs=("rl_rollouts_candidate",),
        location="published",
    ),
)


class Registry(dict):
    """Tables by name; a name that is not registered is an error that names the ones there are."""

    def __missing__(self, name: str) -> Table:
        raise KeyError(f"no table {name!r}; the tables are: {', '.join(self)}")


TABLES: dict[str, Table] = Registry((t.name, t) for t in REGISTRY)


def group(name: str) -> dict[str, Table]:
    """The tables of one group (pipeline stage), in registry order."""
    return {t.name: t for t in REGISTRY if t.group == name}


def in_warehouse() -> list[Table]:
    """The tables and published datasets the DuckDB file has a view of (candidates are not queryable)."""
    return [t for t in REGISTRY if t.location != "candidate"]


def published() -> dict[str, Table]:
    """The published datasets, in registry order."""
    return {t.name: t for t in REGISTRY if t.location == "published"}


def batch_chunks(
    root: str, batch: str, table: str = "messages", **sides: list[str] | None
) -> Iterator[dict[str, pl.DataFrame]]:
    """A batch a chunk of whole trajectories at a time: `table`'s rows of the chunk, and, under their names, the
    rows of each per-trajectory side table (read once, with the columns given; None: every column) whose
    trajectory is in the chunk. Memory follows a chunk, not the batch."""
    loaded = {name: TABLES[name].read(root, batch, columns=columns) for name, columns in sides.items()}
    for rows in TABLES[table].chunks(root, batch):
        ids = rows["trajectory_id"].unique().implode()
        yield {table: rows} | {name: frame.filter(pl.col("trajectory_id").is_in(ids)) for name, frame in loaded.items()}
