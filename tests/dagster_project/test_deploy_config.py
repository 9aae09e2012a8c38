"""The deployment examples in docs/deploy/ are valid configuration for the code as it is.

There is no Kubernetes cluster here, so these tests check what can be checked without one (test_deployment.py
runs the Postgres storage and the Celery run launcher for real):
the instance file passes Dagster's own schema, every class it or the Celery section names imports from the locked
`deploy` extra and accepts its config, the Celery workers' file is what dagster-celery reads, and the Helm values
agree with the instance file on what matters.
"""

from __future__ import annotations

import importlib

import pytest
import yaml
from dagster._config import validate_config
from dagster._core.instance.config import dagster_instance_config

from tests.conftest import ROOT

DEPLOY = ROOT / "docs" / "deploy"


@pytest.fixture(scope="module")
def instance_yaml() -> dict:
    return yaml.safe_load((DEPLOY / "dagster.yaml").read_text())


def test_instance_file_passes_dagsters_schema():
    config, custom_class = dagster_instance_config(str(DEPLOY))
    assert custom_class is None
    assert set(config["storage"]) == {"postgres"}
    assert config["run_launcher"]["class"] == "K8sRunLauncher"
    assert config["concurrency"]["runs"]["max_concurrent_runs"] == 8


@pytest.mark.parametrize("file", ["dagster.yaml", "celery-run-launcher.yaml"])
def test_the_run_launcher_imports_and_accepts_its_config(file):
    entry = yaml.safe_load((DEPLOY / file).read_text())["run_launcher"]
    cls = getattr(importlib.import_module(entry["module"]), entry["class"])
    result = validate_config(cls.config_type(), entry["config"])
    assert result.success, [e.message for e in result.errors]


def test_celery_workers_listen_where_the_run_launcher_sends_runs(monkeypatch):
    """The workers' file is read as `dagster-celery worker start -y` reads it, with the launcher's broker and
    results backend, and a worker takes one run at a time (acknowledged when it ends, so none is reserved)."""
    from dagster_celery.cli import get_validated_config

    monkeypatch.setenv("COWORK_CELERY_BROKER", "redis://redis.internal:6379/0")
    worker = get_validated_config(str(DEPLOY / "celery-worker.yaml"))
    assert (worker["broker"], worker["backend"]) == ("redis://redis.internal:6379/0",) * 2
    launcher = yaml.safe_load((DEPLOY / "celery-run-launcher.yaml").read_text())["run_launcher"]["config"]
    as_written = yaml.safe_load((DEPLOY / "celery-worker.yaml").read_text())["execution"]["config"]
    assert {key: as_written[key] for key in launcher} == launcher  # the same variables
    assert worker["config_source"] == {"task_acks_late": True}


def test_postgres_storage_is_installed_with_the_deploy_extra(instance_yaml):
    from dagster_postgres import DagsterPostgresStorage

    result = validate_config(DagsterPostgresStorage.config_type(), instance_yaml["storage"]["postgres"])
    assert result.success, [e.message for e in result.errors]


def test_cross_batch_jobs_are_limited_to_one_run_by_their_tag(instance_yaml):
    from dagster_project.definitions import defs
    from dagster_project.jobs import CROSS_BATCH_TAG

    (limit,) = instance_yaml["concurrency"]["runs"]["tag_concurrency_limits"]
    assert {limit["key"]: limit["value"]} == CROSS_BATCH_TAG and limit["limit"] == 1
    for job in ("refresh_corpus", "refresh_warehouse"):
        assert CROSS_BATCH_TAG.items() <= defs.resolve_job_def(job).tags.items()
    assert not CROSS_BATCH_TAG.items() <= defs.resolve_job_def("process_batch").tags.items()


def test_helm_values_match_the_instance_file(instance_yaml):
    values = yaml.safe_load((DEPLOY / "values.yaml").read_text())
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    assert deployment["dagsterApiGrpcArgs"] == ["-m", "dagster_project.definitions"]
    importlib.import_module("dagster_project.definitions")
    env = {e["name"]: e["value"] for e in deployment["env"]}
    launcher_env = dict(v.split("=", 1) for v in instance_yaml["run_launcher"]["config"]["env_vars"])
    assert env["COWORK_DATA_ROOT"] == launcher_env["COWORK_DATA_ROOT"] and env["COWORK_DATA_ROOT"].startswith("s3://")
    assert env["COWORK_BATCHES_PER_RUN"] == "1"  # a pod per batch
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    queued = values["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"]
    assert queued["tagConcurrencyLimits"] == instance_yaml["concurrency"]["runs"]["tag_concurrency_limits"]


def test_the_image_copies_every_package_the_wheel_holds():
    """`uv sync` builds the project in the image: a package the Dockerfile leaves out fails the build."""
    import tomllib

    packages = tomllib.loads((DEPLOY.parents[1] / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"][
        "wheel"
    ]["packages"]
    copied = {line.split()[1] for line in (DEPLOY / "Dockerfile").read_text().splitlines() if line.startswith("COPY ")}
    assert set(packages) <= copied and {"sql", "expectations"} <= copied
