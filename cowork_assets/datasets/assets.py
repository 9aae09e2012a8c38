"""Dagster wiring of the datasets stage.

Each dataset is built as a candidate, checked by a *blocking* gate (pandera model + Great
Expectations suite), and only then published as a new version by its own asset. A failed gate stops
that dataset's publication (the previous version stays current) and says why in the UI.
"""

from collections.abc import Callable, Iterable, Iterator

import dagster as dg
import orjson
import polars as pl
from pydantic import PrivateAttr

from cowork_assets.chat_form import published_messages, text_protocol_runs, with_action_format
from cowork_assets.curation import redact
from cowork_assets.curation.secrets import Detector
from cowork_assets.datasets import publish as pub
from cowork_assets.datasets.card import CHARTS, build_card, inline_charts, render_markdown, svg, sweep_svg
from cowork_assets.datasets.funnel import card_inputs
from cowork_assets.datasets.gates import run_gate
from cowork_assets.datasets.preference import build_pairs
from cowork_assets.datasets.rl import build_rl_rollouts, build_rl_tasks, verl_tool_config
from cowork_assets.datasets.schemas import PUBLISHED, SPLITS, PublishedDataset
from cowork_assets.datasets.sft import CURATED_COLUMNS, build_sft, chat_messages, rendered_tokens, token_texts
from cowork_assets.datasets.suites import SuiteProcess, first_ready, give_back, suite_process
from cowork_assets.holdouts import load
from cowork_assets.ingest.formats import coding_categories
from cowork_assets.markdown import table
from cowork_assets.orchestration import verdict
from cowork_assets.orchestration.lineage import column_lineage
from cowork_assets.orchestration.metadata import MARKDOWN_INLINE, as_metadata, trace_link
from cowork_assets.orchestration.partitions import CROSS_BATCH_POOL
from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.orchestration.specs import asset_args
from cowork_assets.selection.exclusions import first_batch_rows
from cowork_assets.selection.holdout import corpus_held_out, training_side
from cowork_assets.selection.preference import pair_runs, prompt_keys, sides
from cowork_assets.store import versions
from cowork_assets.store.models import arrow_schema, polars_schema
from cowork_assets.store.registry import TABLES, published
from cowork_assets.store.storage import (
    SortedSpill,
    exists,
    iter_chunks,
    join,
    parquet_rows,
    read_bytes,
    write_text_atomic,
)
from cowork_assets.store.table import batch_groups
from cowork_assets.store.versions import candidates_folder
from cowork_assets.tokens import HELPER_MIN_TEXTS, TokenCounter

GATE_PART_ROWS = 5_000  # rows of a candidate its gate holds at once (an RL task row is ~20 KB)


def _excluded(settings: CurateSettings, dataset: str) -> pl.DataFrame:
    """The exclusions of `dataset`, every task bucket's computed from the corpus as it is (else an error): a bucket
    that predates a new batch would let its runs through unfiltered."""
    found = TABLES["exclusions"].read_current(settings.root, verdict.corpus_version(settings))
    return found.filter(pl.col("dataset") == dataset)


def _corpus_held_out(settings: CurateSettings) -> pl.DataFrame:
    """The corpus's tasks held out by the benchmark lists (`selection.holdout.held_out`), found once per corpus."""
    return corpus_held_out(settings.root, settings.holdout, settings.holdout_overlap, verdict.corpus_version(settings))


def _held_out(settings: CurateSettings) -> list[str]:
    """Every task no dataset may hold: the lists' test tasks, and the corpus's tasks held out as near duplicates."""
    listed = load(settings.holdout).filter(pl.col("side") == "test")["task_id"]
    found = _corpus_held_out(settings)["task_id"]
    return sorted(set(listed) | set(found))


def _redacted(settings: CurateSettings, frame: pl.DataFrame, texts: list[str], json_texts: list[str]) -> pl.DataFrame:
    """The rows with their secrets replaced by placeholders (settings `redact_secrets`, `secret_allowlist`)."""
    if not settings.redact_secrets:
        return frame
    return redact.rows(frame, texts, json_texts, Detector(tuple(settings.secret_allowlist)))


def _training_side(settings: CurateSettings) -> pl.Series:
    """Task ids a benchmark's own split puts in training: they always land in `train`."""
    return training_side(load(settings.holdout))


Files = dict[str, pl.DataFrame | Iterable[pl.DataFrame]]  # a dataset version's files: name -> rows, in order
CANDIDATES: dict[str, dg.AssetsDefinition] = {}  # dataset -> its candidate asset


def candidate_rows(dataset: str) -> Callable[[Callable[..., Files]], dg.AssetsDefinition]:
    """A published dataset's candidate asset (datasets/schemas.py describes it) around its row-building function:
    `build(context, settings)` returns the version's files, written as one candidate version."""
    described = PUBLISHED[dataset]

    def candidate(build: Callable[..., Files]) -> dg.AssetsDefinition:
        @dg.asset(**asset_args(described.candidate))
        def _asset(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
            return _candidate(context, settings, described, build(context, settings))

        CANDIDATES[dataset] = _asset
        return _asset

    return candidate


def _candidate(
    context: dg.AssetExecutionContext, settings: CurateSettings, described: PublishedDataset, files: Files
) -> dg.MaterializeResult:
    schema = pub.file_schema(arrow_schema(described.model), described.json_fields)
    path = pub.write_candidate(settings.root, described.name, files, {f: schema for f in files})
    rows = {f: parquet_rows(join(path, f"{f}.parquet")) for f in files}
    return dg.MaterializeResult(
        metadata={
            "candidate": dg.MetadataValue.path(str(path)),
            **column_lineage(context.asset_key.path[-1]),
            **{f"{f}_rows": n for f, n in rows.items()},
        }
    )


def _split_spills(settings: CurateSettings, name: str, key: pl.Expr, keys: pl.Series) -> dict[str, SortedSpill]:
    """One spill per split file of a dataset: its rows are built a group of batches at a time and published sorted by
    `key` (`keys`: every row's key)."""
    schema = arrow_schema(TABLES[name].model)
    return {
        s: SortedSpill(join(candidates_folder(settings.root, name), f"{s}.parquet"), schema, key, keys) for s in SPLITS
    }


def _rows_of(settings: CurateSettings, table: str, runs: pl.DataFrame) -> pl.LazyFrame:
    """A per-batch table's rows of `runs` (batch, trajectory_id), read from their batches' files in their order."""
    run = ["batch", "trajectory_id"]
    scan = TABLES[table].scan_batches_of(settings.root, runs)
    return scan.join(runs.lazy().select(run), on=run, how="semi", maintain_order="left")


def _one_ahead(items: Iterable) -> Iterator:
    """Each item of `items`, given once the next one has been made."""
    items, none = iter(items), object()
    current = next(items, none)
    while current is not none:
        following = next(items, none)
        yield current
        current = following


@candidate_rows("sft_dataset")
def sft_rows(context: dg.AssetExecutionContext, settings: CurateSettings) -> Files:
    run = ["batch", "trajectory_id"]
    # The tokenizer's helper processes start first: they load the encoding while the samples are read. Texts
    # repeat from batch to batch: each is counted once. A corpus of fewer than HELPER_MIN_TEXTS messages is counted
    # in this process: a helper's start (~0.7 s of CPU) would cost more than its share of the counting.
    helpers = settings.tokenizer_processes if TABLES["curated_messages"].rows(settings.root) >= HELPER_MIN_TEXTS else 0
    with TokenCounter(settings.token_encoding, helpers, ahead=True) as counter:
        excluded = _excluded(settings, "sft").select(run).unique()
        selected = (
            TABLES["trajectories"]
            .scan(settings.root)
            .filter(pl.col("teacher_role") == "teacher")
            .collect()
            .join(excluded, on=run, how="anti")
        )
        packages = _redacted(
            settings,
            TABLES["task_packages"]
            .scan(settings.root)
            .select("task_hash", "tools")
            .unique("task_hash", keep="first", maintain_order=True)
            .collect(),
            [],
            ["tools"],
        )
        spills, tasks = _split_spills(settings, "sft_dataset", pl.col("task_id"), selected["task_id"]), set()

        def sent_ahead():  # a group of batches' published messages, their tokens sent to be counted
            for runs in batch_groups(selected):
                curated = _rows_of(settings, "curated_messages", runs).select(CURATED_COLUMNS).collect()
                messages = with_action_format(published_messages(curated), settings.action_format)
                yield runs, text_protocol_runs(curated), messages, counter.count_later(token_texts(messages))

        # The helpers count a group's tokens while the one before is built: two groups' messages are held at a
        # time, never the corpus's.
        for runs, text_runs, messages, tokens in _one_ahead(sent_ahead()):
            rows = build_sft(
                runs,
                chat_messages(messages, tokens()),
                _rows_of(settings, "sample_stats", runs).collect(),
                packages.filter(pl.col("task_hash").is_in(runs["task_hash"].implode())),
                settings.validation_fraction,
                _training_side(settings),
                settings.truncation_strategy,
                settings.max_observation_chars,
                text_runs,
                settings.action_format,
            )
            if settings.tokenizer:  # the trainer's own count: the sample as its chat template renders it
                rows = rows.with_columns(tokens=pl.Series(rendered_tokens(rows, settings.tokenizer), dtype=pl.Int64))
            tasks.update(rows["task_id"].to_list())
            for split, spill in spills.items():
                spill.write(rows.filter(pl.col("split") == split))
    context.log.info(f"SFT candidate: {sum(s.rows for s in spills.values())} samples from {len(tasks)} tasks")
    return {s: spill.sorted("sample_id") for s, spill in spills.items()}


@candidate_rows("rl_tasks")
def rl_task_rows(context: dg.AssetExecutionContext, settings: CurateSettings) -> Files:
    excluded = _excluded(settings, "rl_tasks").select("task_id").unique()
    chosen = (  # a task's package where most of its runs are; only those packages are read whole
        TABLES["task_packages"]
        .scan(settings.root)
        .select("batch", "task_hash", "task_id", "n_trajectories")
        .collect()
        .sort(["task_id", "n_trajectories", "task_hash"], descending=[False, True, False])
        .unique("task_id", keep="first", maintain_order=True)
        .join(excluded, on="task_id", how="anti")
        .sort("task_id")
        .with_row_index("index")  # its place in the published order
    )
    firsts = TABLES["trajectories"].scan(settings.root).select("trajectory_id", "task_id").collect()
    systems = (
        TABLES["messages"]
        .scan(settings.root)
        .filter(pl.col("message_index") == 0, pl.col("role") == "system")
        .select("trajectory_id", system="content")
        .collect()
        .join(firsts, on="trajectory_id")
        .sort("trajectory_id")
        .unique("task_id", keep="first")
        .select("task_id", "system")
    )
    rates = (
        TABLES["trajectories"]
        .scan(settings.root)
        .filter(pl.col("teacher_role") == "teacher")
        .group_by("task_id")
        .agg(pass_rate=pl.col("grade_passed").cast(pl.Float64).mean())
        .collect()
    )
    spills = _split_spills(settings, "rl_tasks", pl.col("extra_info").struct.field("index"), chosen["index"])
    for keys in batch_groups(chosen):
        # a group of batches' chosen packages at a time: a state slice per tool makes the rows larger than them
        packages = TABLES["task_packages"].read_keyed(settings.root, keys, "task_hash")
        packages = _redacted(
            settings,
            packages.join(keys.select("task_hash", "index"), on="task_hash").join(systems, on="task_id", how="left"),
            ["request", "system"],
            ["tools", "checks", "initial_state"],
        )
        rows = build_rl_tasks(
            packages.drop("system"),
            packages.select("task_id", "system"),
            rates,
            settings.validation_fraction,
            _training_side(settings),
        )
        for split, spill in spills.items():
            spill.write(rows.filter(pl.col("extra_info").struct.field("split") == split))
    return {s: spill.sorted() for s, spill in spills.items()}


@candidate_rows("rl_rollouts")
def rl_rollout_rows(context: dg.AssetExecutionContext, settings: CurateSettings) -> Files:
    runs = TABLES["trajectories"].scan(settings.root)
    if settings.rl_rollout_role != "all":
        runs = runs.filter(pl.col("teacher_role") == settings.rl_rollout_role)
    # Runs of held-out tasks, and of held-back batches, are left out; found here, not read from exclusions, which
    # rollouts do not wait for.
    held = _corpus_held_out(settings).select("task_id")
    runs = first_batch_rows(runs.collect()).join(held, on="task_id", how="anti")
    held_back = verdict.corpus_now(context.instance, settings, deep=False).held_back
    runs = runs.filter(~pl.col("batch").is_in(list(held_back)))
    # regrade has replayed every run's checks on its transcript: the rewards and first turns come from there
    replayed = (
        TABLES["regrade"]
        .scan(settings.root)
        .select("batch", "trajectory_id", "checks")
        .join(runs.lazy().select("batch", "trajectory_id"), on=["batch", "trajectory_id"], how="semi")
        .collect()
    )
    rows = build_rl_rollouts(runs, replayed, settings.rl_group_by, settings.rl_advantage_epsilon, settings.rl_std)
    return {"rollouts": rows}


@candidate_rows("preference_pairs")
def preference_rows(context: dg.AssetExecutionContext, settings: CurateSettings) -> Files:
    """The runs exclusions leaves to the preference dataset are exactly those in pairs: paired again here by the same
    rule (`selection/preference.py`), each side in its published form."""
    run = ["batch", "trajectory_id"]
    excluded = _excluded(settings, "preference").select(run).unique()
    runs = (
        TABLES["trajectories"]
        .scan(settings.root)
        .collect()
        .join(excluded, on=run, how="anti")
        .filter(pl.col("grade_passed").is_not_null())
    )
    keys = prompt_keys(TABLES["messages"].scan(settings.root).join(runs.lazy().select(run), on=run, how="semi"))
    sized = runs.join(keys.collect(), on=run, how="left").with_columns(chars=pl.col("chars_total"))
    empty = pl.DataFrame(schema={"batch": pl.String, "trajectory_id": pl.String})
    guards = pl.DataFrame(schema={**empty.schema, "criterion": pl.String, "reason": pl.String, "detail": pl.String})
    pairs, _ = pair_runs(sides(sized, guards, empty, empty), settings.preference_margin, 1 << 30)
    samples = []
    packages = TABLES["task_packages"].scan(settings.root).select("task_hash", "tools").unique("task_hash").collect()
    for part in batch_groups(runs):
        curated = _rows_of(settings, "curated_messages", part).select(CURATED_COLUMNS).collect()
        messages = with_action_format(published_messages(curated), settings.action_format)
        chat = chat_messages(messages, [0] * messages.height)
        stats = _rows_of(settings, "sample_stats", part).collect()
        built = build_sft(
            part,
            chat,
            stats,
            packages,
            0.0,
            None,
            settings.truncation_strategy,
            settings.max_observation_chars,
            text_protocol_runs(curated),
            settings.action_format,
        )
        samples.append(built.select("batch", "trajectory_id", "messages", "tools", "chars"))
    rows = (
        build_pairs(
            pairs,
            runs,
            pl.concat(samples) if samples else pl.DataFrame(),
            settings.validation_fraction,
            _training_side(settings),
        )
        if samples
        else pl.DataFrame(schema=polars_schema(TABLES["preference_pairs"].model))
    )
    context.log.info(f"preference candidate: {rows.height} pairs from {rows['task_id'].n_unique()} tasks")
    return {s: rows.filter(pl.col("split") == s) for s in SPLITS}


class QualitySuites(dg.ConfigurableResource):
    """The datasets' Great Expectations suites, run by a helper process that a run with a gate starts as
    it begins: Great Expectations is imported there while the steps before the gates run. A helper still
    alive at the end serves the next run in the same process."""

    _process: SuiteProcess | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._process = suite_process()

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._process is not None:
            give_back(self._process)

    @property
    def process(self) -> SuiteProcess:
        """The helper, once it has imported Great Expectations (`first_ready`)."""
        if self._process is None:
            raise RuntimeError("the quality suites resource is used outside a run")
        self._process = first_ready(self._process)
        return self._process


def _gate(dataset: str, asset: dg.AssetsDefinition) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=asset,
        name="quality_gate",
        blocking=True,
        description=f"Blocking: the {dataset} candidate must pass its pandera model and "
        f"expectations/{dataset}.json, or it is not published.",
    )
    def _check(
        context: dg.AssetCheckExecutionContext, settings: CurateSettings, suites: QualitySuites
    ) -> dg.AssetCheckResult:
        folder = versions.candidate(settings.root, dataset)
        files = versions.parquet_files(folder)
        parts = (part for f in files for part in iter_chunks(f, rows=GATE_PART_ROWS))
        rules = {
            "char_budget": settings.char_budget,
            "category_char_budgets": settings.char_budgets(coding_categories()),
            "held_out": _held_out(settings),
            "redact_secrets": settings.redact_secrets,
            "secret_allowlist": settings.secret_allowlist,
        }
        passed, failures = run_gate(dataset, parts, rules, suites.process)
        if passed:
            pub.mark_gated(folder)
        return dg.AssetCheckResult(
            passed=passed,
            metadata=as_metadata(
                {
                    "candidate": str(folder),
                    "rows": sum(parquet_rows(f) for f in files),
                    "failed_expectations": len(failures),
                    "failures": table(
                        ["expectation", "column", "unexpected", "examples"], [tuple(f.values()) for f in failures]
                    )
                    if failures
                    else "none",
                }
            ),
        )

    return _check


VERL_TOOLS = "verl_tools.yaml"  # beside the rl_tasks files: the tool config a verl multi-turn run points at


def _simulated_tools(files: list[str]) -> list[str]:
    """The tools of the RL task rows whose tools the workspace simulation answers."""
    info = pl.col("extra_info")
    return (
        pl.scan_parquet(files)
        .filter(info.struct.field("tools_simulated"))
        .select(info.struct.field("tool_selection").explode())
        .unique()
        .collect()
        .to_series()
        .drop_nulls()
        .to_list()
    )


def _publish_asset(dataset: str, source: dg.AssetsDefinition) -> dg.AssetsDefinition:
    @dg.asset(
        **asset_args(dataset),
        check_specs=[
            dg.AssetCheckSpec(
                "passed_quality_gate",
                asset=dataset,
                description=f"The current version passed the blocking quality gate of "
                f"{source.key.to_user_string()} (a candidate that fails it is never published).",
            )
        ],
    )
    def _asset(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
        corpus = verdict.corpus_now(context.instance, settings)
        if blocked := corpus.blocked:  # every path, the UI's too
            raise dg.Failure(f"{dataset} not published: {blocked}")
        # A selected dataset's candidate was built after the exclusions: if they are not of the corpus as it is now
        # (read after the batches above), a batch was committed, redone or dropped since, and the candidate may hold
        # its runs unfiltered, or lack them while the card names them.
        described, exclusions = PUBLISHED[dataset], None
        if described.exclusions:  # read once, for this check and the card
            found, stale = TABLES["exclusions"].read_noted(settings.root, verdict.corpus_version(settings))
            if stale:
                raise dg.Failure(
                    f"{dataset} not published: the corpus changed after its candidate's exclusions were computed (a "
                    "batch finished, was redone or dropped meanwhile): materialize refresh_corpus again"
                )
            exclusions = found.filter(pl.col("dataset") == described.exclusions)
        candidate = versions.parquet_files(versions.candidate(settings.root, dataset))
        counts = {p.rsplit("/", 1)[-1].removesuffix(".parquet"): parquet_rows(p) for p in candidate}
        rows = sum(counts.values())
        if refused := pub.shrink_refused(settings.root, dataset, rows, settings.max_shrink):
            raise dg.Failure(f"{dataset} not published: {refused}")
        now = pub.current_rows(settings.root, dataset)
        inputs = {
            **card_inputs(settings, dataset, candidate, rows, _corpus_held_out(settings), exclusions),
            "previous_rows": now[1] if now else None,
        }
        inputs["batches"] = corpus.card()
        examples = trace_examples(candidate) if described.trace_examples else {}  # before publishing moves the files
        cards = {}

        def card_files(version: str, previous: str | None) -> dict[str, str]:
            cards["card"] = build_card(dataset, version, previous, counts, **inputs)
            return {
                "card.json": orjson.dumps(cards["card"], option=orjson.OPT_INDENT_2).decode(),
                "card.md": render_markdown(cards["card"]),
                "lengths.svg": svg(cards["card"]["length_histogram"], f"{dataset}: characters per sample"),
                **(
                    {"sweep.svg": sweep_svg(cards["card"]["truncation_sweep"], "at-risk evidence lost, by allowance")}
                    if cards["card"]["truncation_sweep"]
                    else {}
                ),
                **({VERL_TOOLS: verl_tool_config(_simulated_tools(candidate))} if described.tool_config else {}),
            }

        publication = pub.publish(settings.root, dataset, card_files)
        card = orjson.loads(read_bytes(join(publication.path, "card.json")))
        context.log.info(f"{dataset}: {'published' if publication.new else 'unchanged, still'} {publication.version}")
        gate = dg.AssetCheckResult(
            check_name="passed_quality_gate",
            passed=True,
            metadata={
                "version": publication.version,
                "rows": rows,
                "gate": f"{source.key.to_user_string()}:quality_gate passed "
                f"(pandera model, expectations/{dataset}.json)",
            },
        )
        return dg.MaterializeResult(
            check_results=[gate],
            metadata={
                "dagster/row_count": rows,
                "version": publication.version,
                "previous_version": card["previous_version"] or "none",  # the current version's, however republished
                "path": dg.MetadataValue.path(str(publication.path)),
                "current": dg.MetadataValue.path(join(versions.published_folder(settings.root, dataset), "CURRENT")),
                "card": dg.MetadataValue.md(inline_charts(render_markdown(card), charts(publication.path))),
                "batch_checks": dg.MetadataValue.md(corpus.checks_summary()),
                **column_lineage(dataset),
                **{f"{k}_rows": n for k, n in counts.items()},
                **examples,
            },
        )

    return _asset


published_assets = [_publish_asset(d.name, CANDIDATES[d.name]) for d in PUBLISHED.values()]
dataset_assets = [*(CANDIDATES[d] for d in PUBLISHED), *published_assets]
dataset_checks = [_gate(d.name, CANDIDATES[d.name]) for d in PUBLISHED.values()]


@dg.asset(
    group_name="datasets",
    deps=published_assets,
    kinds={"json"},
    pool=CROSS_BATCH_POOL,
    description="The combined card of the current publications: <data_root>/published/CARD.md and CARD.json, "
    "naming each dataset's current and previous version (each version folder also holds its own card).",
)
def dataset_card(context: dg.AssetExecutionContext, settings: CurateSettings) -> dg.MaterializeResult:
    cards = {
        name: orjson.loads(read_bytes(join(versions.current_path(settings.root, name), "card.json")))
        for name in published()
    }
    root = join(settings.root, versions.PUBLISHED)
    rendered = {name: render_markdown(card) for name, card in cards.items()}
    text = "\n\n".join(  # CARD.md links the charts beside each version's card
        inline_charts(md, {chart: f"{name}/current/{chart}" for chart in CHARTS}, as_link=True)
        for name, md in rendered.items()
    )
    write_text_atomic(join(root, "CARD.json"), orjson.dumps(cards, option=orjson.OPT_INDENT_2).decode())
    write_text_atomic(join(root, "CARD.md"), text)
    shown = "\n\n".join(
        inline_charts(md, charts(versions.current_path(settings.root, name))) for name, md in rendered.items()
    )
    return dg.MaterializeResult(
        metadata={
            "card": dg.MetadataValue.md(shown),
            "path": dg.MetadataValue.path(join(root, "CARD.md")),
            **{f"{name}_version": card["version"] for name, card in cards.items()},
        }
    )


dataset_assets.append(dataset_card)


def charts(version_folder: str) -> dict[str, str]:
    """The SVG charts of a published version, by file name."""
    return {
        name: read_bytes(join(version_folder, name)).decode() for name in CHARTS if exists(join(version_folder, name))
    }


def trace_examples(files: list[str], n: int = 3) -> dict:
    """Up to `n` sample ids of a dataset, each a link to the trace job's launchpad with it filled in: as many as
    keep the text under MARKDOWN_INLINE characters, which Dagster shows on the page rather than behind a click."""
    ids = pl.scan_parquet(files).select("sample_id").head(n).collect()["sample_id"].to_list() if files else []
    text = (
        "To its raw line: click an id (the launchpad of the `trace_sample` job opens with it filled in), then "
        "Launch Run; or run `cowork-curate trace <sample_id>`.\n"
    )
    for link in (f"\n- {trace_link(i)}" for i in ids):
        if len(text) + len(link) >= MARKDOWN_INLINE:
            break
        text += link
    return {"trace_a_sample": dg.MetadataValue.md(text)}
