"""Schedules: a daily refresh of everything that looks across batches (off until switched on)."""

import dagster as dg

from dagster_project.jobs import refresh_corpus


def daily_refresh(cron: str, problem: str | None = None) -> dg.ScheduleDefinition:
    """The schedule at `cron`; `problem` is why the configured cron was refused (the default is used)."""
    warning = (
        f"COWORK_REFRESH_CRON was refused: {problem}; running at the default {cron!r} instead. " if problem else ""
    )
    return dg.ScheduleDefinition(
        name="daily_refresh",
        job=refresh_corpus,
        cron_schedule=cron,
        default_status=dg.DefaultScheduleStatus.STOPPED,
        description=warning
        + "Recompute task findings, dedup clusters, exclusions and the gated datasets from every batch "
        "processed so far, and publish new versions. New batches themselves arrive through new_batch_sensor.",
    )
