"""A batch run's stages as one Dagster step.

Each stage (ingest, evidence, curation, ...) declares the tables it writes and the checks it reports in its own
folder's `assets.py`, as a `BatchStage`. `one_step` makes them one multi-asset: one step per batch run instead of one
per stage. The tables stay assets of their own, with their own checks, lineage and code versions. A step has a fixed
cost that does not depend on the records: Dagster's step events, and a lookup of each input's latest materialization.
On a small batch that fixed cost outweighs the stage's own work.
"""

import logging
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import dagster as dg

from cowork_assets.orchestration.batch_events import OneBatch, batch_events
from cowork_assets.orchestration.partitions import batches
from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.orchestration.specs import StepCheck, spec
from cowork_assets.settings import BATCHES_PER_RUN

# Each batch of a run over several, as it is written: the CLI prints these while the run goes on.
PROGRESS = logging.getLogger("cowork_curate.batches")


@dataclass(frozen=True)
class BatchStage:
    """What a stage writes (`specs`), the checks it reports, and `compute(context, settings)`, which returns or
    yields their results (a `MaterializeResult` without an asset key is for the stage's only table)."""

    name: str
    specs: tuple[dg.AssetSpec, ...]
    checks: tuple[StepCheck, ...]
    compute: Callable

    @property
    def keys(self) -> list[dg.AssetKey]:
        return [s.key for s in self.specs]

    @property
    def check_keys(self) -> list[dg.AssetCheckKey]:
        return [c.spec.key for c in self.checks]

    def results(self, context: dg.AssetExecutionContext, settings: CurateSettings) -> Iterator:
        """The stage's results, each naming its asset, with only the checks the run selected."""
        out = self.compute(context, settings)
        checks = context.selected_asset_check_keys
        chosen = lambda r: dg.AssetCheckKey(r.asset_key, r.check_name) in checks  # noqa: E731
        for result in [out] if isinstance(out, dg.MaterializeResult) else out:
            if isinstance(result, dg.AssetCheckResult):
                if chosen(result):
                    yield result
                continue
            yield dg.MaterializeResult(
                asset_key=result.asset_key or self.keys[0],
                metadata=result.metadata,
                check_results=[c for c in result.check_results or [] if chosen(c)],
                tags=result.tags,
            )


def batch_stage(
    *tables: str, checks: Iterable[StepCheck] = (), specs: Sequence[dg.AssetSpec] = ()
) -> Callable[[Callable], BatchStage]:
    """Declare `compute` as the stage that writes `tables` (registered tables) or `specs`, and reports `checks`."""

    def declare(compute: Callable) -> BatchStage:
        return BatchStage(compute.__name__, (*map(spec, tables), *specs), tuple(checks), compute)

    return declare


def one_step(name: str, stages: Sequence[BatchStage], description: str) -> dg.AssetsDefinition:
    """The stages, in order, as one step of a batch partition, or of several batches one after another (a run over a
    range of them: orchestration/batch_events.py). A run may select some of them (the UI's Materialize of one asset):
    a stage runs when its tables are selected, all of them, as it writes them together."""

    @dg.multi_asset(
        name=name,
        description=description,
        specs=[s.replace_attributes(skippable=True) for stage in stages for s in stage.specs],
        check_specs=[c.spec for stage in stages for c in stage.checks],
        partitions_def=batches,
        can_subset=True,
        backfill_policy=dg.BackfillPolicy.multi_run(BATCHES_PER_RUN),  # a UI backfill: the default batches_per_run
    )
    def _step(context: dg.AssetExecutionContext, settings: CurateSettings):
        chosen = _selected(stages, context.selected_asset_keys)
        if len(context.partition_keys) == 1:
            for stage in chosen:
                yield from stage.results(context, settings)
            return
        failed = {}
        for i, batch in enumerate(context.partition_keys, 1):
            where = f"{i} of {len(context.partition_keys)} in this run"
            context.log.info(f"batch {batch} ({where})")
            started = time.monotonic()
            try:
                for stage in chosen:
                    yield from batch_events(context, batch, stage.results(OneBatch(context, batch), settings))
            except Exception as error:  # the batch fails alone: the others of the run keep what they wrote
                context.log.error(f"batch {batch} failed:\n{traceback.format_exc()}")
                failed[batch] = f"{type(error).__name__}: {error}"
                continue
            PROGRESS.info(f"batch {batch}: written ({where}, {time.monotonic() - started:.1f}s)")
        if failed:
            raise dg.Failure(
                f"{len(failed)} of {len(context.partition_keys)} batches failed: {', '.join(failed)}",
                metadata={batch: dg.MetadataValue.text(error) for batch, error in failed.items()},
            )

    return _step


def _selected(stages: Sequence[BatchStage], selected: AbstractSet[dg.AssetKey]) -> list[BatchStage]:
    """The stages whose tables the run selected."""
    chosen = []
    for stage in stages:
        picked = [k for k in stage.keys if k in selected]
        if picked and len(picked) < len(stage.keys):
            names = ", ".join(k.to_user_string() for k in stage.keys)
            raise dg.Failure(f"{stage.name} writes its tables together: select all of {names}")
        if picked:
            chosen.append(stage)
    return chosen


def failed_stage(stages: Sequence[BatchStage], reported: set) -> str | None:
    """The stage a failed batch step stopped in: the first whose tables and checks (`AssetKey`s and `AssetCheckKey`s)
    were not all reported."""
    return next((s.name for s in stages if not {*s.keys, *s.check_keys} <= reported), None)
