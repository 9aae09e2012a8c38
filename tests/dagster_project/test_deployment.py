"""The documented deployment, run for real: docs/deploy/dagster.yaml's Postgres storage against a PostgreSQL server
on loopback, with the data root in a bucket (moto's S3 server). Only its run launcher is swapped for the default
one (there is no Kubernetes cluster here). The CLI runs on it and publishes exactly what a local run publishes;
the runs are in Postgres; a server that is not there is one line, not a traceback."""

from __future__ import annotations

import polars as pl
import pytest
import yaml

from cowork_assets.store import versions
from cowork_assets.synthetic.generate import generate
from cowork_cli.cli import main
from cowork_cli.runner import environment
from tests.conftest import ROOT
from tests.servers import postgres_server, s3_server

BUCKET = "deployed"
DATASETS = ("sft_dataset", "rl_tasks", "rl_rollouts")


def _instance_home(home) -> str:
    """A Dagster home with the deploy file as it is, but the default run launcher and no telemetry."""
    config = yaml.safe_load((ROOT / "docs" / "deploy" / "dagster.yaml").read_text())
    config.pop("run_launcher")
    config["telemetry"] = {"enabled": False}
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    return str(home)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    base = tmp_path_factory.mktemp("deploy")
    generate(base / "raw", trajectories=24, batches=2, seed=5)
    with postgres_server() as pg, environment(**pg), s3_server(BUCKET, base / "work"):
        home = _instance_home(base / "home")
        remote = f"s3://{BUCKET}/curated"
        status = main(["run", "--raw-root", str(base / "raw"), "--data-root", remote, "--dagster-home", home])
        import dagster as dg

        with dg.DagsterInstance.from_config(home) as instance:
            runs = [(r.job_name, r.status.value) for r in instance.get_runs()]
            storage = type(instance.run_storage).__name__
        published = {d: versions.current(remote, d) for d in DATASETS}
        rows = {d: pl.read_parquet(versions.parquet_files(versions.current_path(remote, d))).height for d in DATASETS}
        yield base, status, runs, storage, published, rows


def test_the_cli_runs_on_the_documented_postgres_instance_and_records_its_runs_there(deployed):
    _, status, runs, storage, _, _ = deployed
    assert status == 0 and storage == "PostgresRunStorage"
    assert sorted(runs) == sorted(
        [("process_batch", "SUCCESS")] * 2 + [("refresh_corpus", "SUCCESS"), ("refresh_warehouse", "SUCCESS")]
    )


def test_a_deployed_run_publishes_what_a_local_run_publishes(deployed, tmp_path):
    base, _, _, _, published, rows = deployed
    local = tmp_path / "local"
    args = ["run", "--raw-root", str(base / "raw"), "--data-root", str(local)]
    assert main([*args, "--dagster-home", str(tmp_path / "home")]) == 0
    assert published == {d: versions.current(str(local), d) for d in DATASETS}  # version names are content digests
    assert all(rows.values())


def test_a_postgres_server_that_is_not_there_is_one_line(tmp_path, capsys):
    home = _instance_home(tmp_path / "home")
    pg = {"DAGSTER_PG_HOST": "127.0.0.1", "DAGSTER_PG_PORT": "9", "DAGSTER_PG_DB": "x", "DAGSTER_PG_USER": "x"}
    generate(tmp_path / "raw", trajectories=4, batches=1, seed=1)
    with environment(**pg, DAGSTER_PG_PASSWORD=""):
        status = main(
            ["run", "--raw-root", str(tmp_path / "raw"), "--data-root", str(tmp_path / "out")]
            + ["--dagster-home", home]
        )
    *retries, error = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and error.startswith("cowork-curate run: error: the Dagster instance at ")
    assert 'cannot reach its Postgres database (connection to server at "127.0.0.1", port 9 failed' in error
    assert all("Retrying failed database connection" in line for line in retries)  # a line each, if shown
