"""Run a job headless as the UI would record it: with the origin of the code location `workspace.yaml` names.

A run made by `execute_in_process` or `execute_job` carries no code-location origin, so the UI leaves it off the
Overview timeline and the job's pages and warns when it is re-executed. Dagster offers no public way to create a
run with that origin and execute it in the calling process, so this module, and only this one, uses Dagster's
own (private) classes for it: `tests/dagster_project/test_ui_browser.py` fails when an upgrade changes them
(a CLI run must show on the Overview timeline, and re-execute from the UI).
"""

from __future__ import annotations

import sys
from pathlib import Path

import dagster as dg
from dagster._core.execution.api import execute_run
from dagster._core.remote_origin import (
    ManagedGrpcPythonEnvCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

from cowork_assets.orchestration.metadata import LOCATION_NAME, REPOSITORY

MODULE = "dagster_project.definitions"


def job_origin(job_name: str) -> RemoteJobOrigin:
    """The job's origin as the code location of `workspace.yaml` (`python_module`, `location_name`) gives it."""
    target = LoadableTargetOrigin(executable_path=sys.executable, module_name=MODULE, working_directory=str(Path.cwd()))
    location = ManagedGrpcPythonEnvCodeLocationOrigin(loadable_target_origin=target, location_name=LOCATION_NAME)
    return RemoteJobOrigin(RemoteRepositoryOrigin(location, REPOSITORY), job_name)


def execute(job_name: str, instance: dg.DagsterInstance, run_config: dict, tags: dict[str, str]):
    """Create the job's run with its origin and execute it in this process; the result, failures included. The run
    carries the job's own tags (the queue limits cross-batch runs by them), as a launched run does."""
    job = dg.build_reconstructable_job(MODULE, "job_definition", reconstructable_args=(job_name,))
    definition = job.get_definition()
    run = instance.create_run_for_job(
        job_def=definition,
        run_config=run_config,
        tags={**definition.tags, **tags},
        remote_job_origin=job_origin(job_name),
        job_code_origin=job.get_python_origin(),
    )
    return execute_run(job, run, instance, raise_on_error=False)
