"""The documented deployment, run for real: docs/deploy/dagster.yaml's Postgres storage against a PostgreSQL server
on loopback, with the data root in a bucket (moto's S3 server), and the documented off-Kubernetes run launcher
(docs/deploy/celery-run-launcher.yaml: Celery, with Redis as broker) in place of its Kubernetes one. The CLI runs on
it; then `dagster dev` (webserver and daemon) with the deploy file's queued run coordinator, its sensors switched
on, processes two batches dropped at once in two Celery workers side by side and publishes them. Every version
published equals a local run's over the same batches; the runs are in Postgres; a server that is not there is one
line, not a traceback. And the deploy file's Kubernetes run launcher, pointed at a stand-in API, sends each run as
the documented Job."""

from __future__ import annotations

import shutil

import polars as pl
import pytest
import yaml

from cowork_assets.store import versions
from cowork_assets.synthetic.generate import generate
from cowork_cli.cli import main
from cowork_cli.workers import environment
from tests.conftest import ROOT
from tests.servers import celery_workers, postgres_server, redis_server, s3_server

BUCKET = "deployed"
DATASETS = ("sft_dataset", "rl_tasks", "rl_rollouts")
DEPLOY = ROOT / "docs" / "deploy"


def _instance_home(home, run_launcher: dict | None = None) -> str:
    """A Dagster home with the deploy file as it is, but `run_launcher` (the default one if None) in place of its
    Kubernetes one, and no telemetry."""
    config = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())
    config.pop("run_launcher")
    if run_launcher:
        config["run_launcher"] = run_launcher
    config["telemetry"] = {"enabled": False}
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    return str(home)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    base = tmp_path_factory.mktemp("deploy")
    generate(base / "raw", trajectories=24, batches=2, seed=5)
    with (
        postgres_server() as pg,
        redis_server() as broker,
        environment(**pg, COWORK_CELERY_BROKER=broker),
        s3_server(BUCKET, base / "work"),
    ):
        celery = yaml.safe_load((DEPLOY / "celery-run-launcher.yaml").read_text())["run_launcher"]
        home = _instance_home(base / "home", celery)
        remote = f"s3://{BUCKET}/curated"
        status = main(["run", "--raw-root", str(base / "raw"), "--data-root", remote, "--dagster-home", home])
        import dagster as dg

        with dg.DagsterInstance.from_config(home) as instance:
            runs = [(r.job_name, r.status.value) for r in instance.get_runs()]
            storage = type(instance.run_storage).__name__
        published = {d: versions.current(remote, d) for d in DATASETS}
        rows = {d: pl.read_parquet(versions.parquet_files(versions.current_path(remote, d))).height for d in DATASETS}
        live = _dropped_batches_through_the_daemon(base, home, remote)
        yield base, status, runs, storage, published, rows, live


DROPPED = ("2026-12-02-teacher-x", "2026-12-02-teacher-y")


def _dropped_batches_through_the_daemon(base, home: str, remote: str) -> dict:
    """Two batches dropped at once while `dagster dev` runs on the deployed instance with the sensors on and two
    Celery workers take the runs it launches: the runs it made (job, partition, status, start, end, and which
    worker executed it: 0 or 1, None for neither) and the versions current once nothing is in flight."""
    import os
    import time

    import dagster as dg

    from cowork_assets.orchestration.run_health import WAITING, recorded_process
    from tests.dagster_project.test_automation_live import SENSORS, START
    from tests.live_ui import dagster_dev, graphql

    roots = {"COWORK_RAW_ROOT": str(base / "raw"), "COWORK_DATA_ROOT": remote}
    logs = [base / "dagster-dev.log", base / "worker-1.log", base / "worker-2.log"]
    with (
        dg.DagsterInstance.from_config(home) as instance,
        celery_workers(("worker-1", "worker-2"), home, base, **roots) as workers,
        dagster_dev(home, str(base / "raw"), remote, logs[0], COWORK_BATCHES_PER_RUN="1") as (url, server),
    ):
        before = {r.dagster_run.run_id for r in instance.get_run_records()}
        repo = graphql(url, SENSORS)["repositoriesOrError"]["nodes"][0]
        for name in ("new_batch_sensor", "corpus_refresh_sensor"):
            selector = {"repositoryLocationName": repo["location"]["name"], "repositoryName": repo["name"]}
            graphql(url, START, {"s": {**selector, "sensorName": name}})
        for seed in (6, 7):
            generate(base / f"drop-{seed}", trajectories=6, batches=1, seed=seed)
        for seed, name in zip((6, 7), DROPPED):  # both at once: one sensor tick sees both
            (batch,) = [p for p in (base / f"drop-{seed}").iterdir() if p.is_dir()]
            shutil.move(batch, base / "raw" / name)
        deadline = time.monotonic() + 300

        def runs() -> list:
            return [r for r in instance.get_run_records() if r.dagster_run.run_id not in before]

        while not (
            {r.dagster_run.job_name for r in runs()} >= {"process_batch", "refresh_corpus", "refresh_warehouse"}
            and not instance.get_run_records(dg.RunsFilter(statuses=WAITING))
        ):
            if time.monotonic() > deadline or any(p.poll() is not None for p in (server, *workers)):
                tails = "\n".join(f"{log.name}:\n{log.read_text()[-2000:]}" for log in logs)
                pytest.fail(f"the daemon did not settle; log tails:\n{tails}")
            time.sleep(2)

        def worker(run: dg.DagsterRun) -> int | None:
            """The worker whose session holds the run's process (alive still: a worker keeps its processes)."""
            identity = recorded_process(run)
            session = os.getsid(int(identity.split(":")[1])) if identity else None
            sessions = [w.pid for w in workers]
            return sessions.index(session) if session in sessions else None

        made = [
            (r.dagster_run.job_name, r.dagster_run.tags.get("dagster/partition"), r.dagster_run.status.value)
            + (r.start_time, r.end_time, worker(r.dagster_run))
            for r in runs()
        ]
    return {"runs": made, "published": {d: versions.current(remote, d) for d in DATASETS}}


def test_the_cli_runs_on_the_documented_postgres_instance_and_records_its_runs_there(deployed):
    _, status, runs, storage, _, _, _ = deployed
    assert status == 0 and storage == "PostgresRunStorage"
    assert sorted(runs) == sorted(
        [("process_batch", "SUCCESS"), ("refresh_corpus", "SUCCESS"), ("refresh_warehouse", "SUCCESS")]
    )


def test_a_deployed_run_publishes_what_a_local_run_publishes(deployed, tmp_path):
    base, _, _, _, published, rows, _ = deployed
    local = tmp_path / "local"
    shutil.copytree(base / "raw", tmp_path / "raw", ignore=shutil.ignore_patterns(*DROPPED))
    args = ["run", "--raw-root", str(tmp_path / "raw"), "--data-root", str(local)]
    assert main([*args, "--dagster-home", str(tmp_path / "home")]) == 0
    assert published == {d: versions.current(str(local), d) for d in DATASETS}  # version names are content digests
    assert all(rows.values())


def test_two_celery_workers_run_dropped_batches_side_by_side_and_publish_what_a_local_run_does(deployed, tmp_path):
    base, _, _, _, _, _, live = deployed
    batch_runs = sorted(r for r in live["runs"] if r[0] == "process_batch")
    assert [r[1:3] for r in batch_runs] == [(b, "SUCCESS") for b in DROPPED]
    (_, _, _, start_x, end_x, worker_x), (_, _, _, start_y, end_y, worker_y) = batch_runs
    assert start_x < end_y and start_y < end_x  # at once
    assert {worker_x, worker_y} == {0, 1}  # one run in each worker
    assert all(status == "SUCCESS" and worker is not None for _, _, status, _, _, worker in live["runs"])
    args = ["run", "--raw-root", str(base / "raw"), "--data-root", str(tmp_path / "local")]
    assert main([*args, "--dagster-home", str(tmp_path / "home")]) == 0
    digest = lambda version: version.split("-", 1)[1]  # noqa: E731  (the bucket's is its second version)
    local = {d: digest(versions.current(str(tmp_path / "local"), d)) for d in DATASETS}
    assert {d: digest(v) for d, v in live["published"].items()} == local


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


def test_the_documented_kubernetes_launcher_sends_each_run_as_the_documented_job(tmp_path):
    """docs/deploy/dagster.yaml's K8sRunLauncher, as `dagster dev` loads it, launches a run: the Job it sends to
    the Kubernetes API (a stand-in on loopback: no cluster runs it) is the documented image running the run, with
    the documented service account, environment, secrets, raw volume and resources. Only the instance's storage
    (SQLite here; Postgres is tested above) and how the launcher finds the API (a kubeconfig) differ."""
    import json
    import time

    import dagster as dg

    from tests.live_ui import dagster_dev, launch
    from tests.servers import kubernetes_api

    config = yaml.safe_load((ROOT / "docs" / "deploy" / "dagster.yaml").read_text())
    config.pop("storage")
    config.pop("run_monitoring")  # it would ask the stand-in API how the pod is doing
    launcher = dict(config["run_launcher"]["config"])
    generate(tmp_path / "raw", trajectories=2, batches=1, seed=2)
    (batch,) = [p.name for p in (tmp_path / "raw").iterdir() if p.is_dir()]
    with kubernetes_api(tmp_path) as (kubeconfig, jobs):
        config["run_launcher"]["config"] |= {"load_incluster_config": False, "kubeconfig_file": str(kubeconfig)}
        home = tmp_path / "home"
        home.mkdir()
        (home / "dagster.yaml").write_text(yaml.safe_dump(config))
        with dg.DagsterInstance.from_config(str(home)) as instance:
            instance.add_dynamic_partitions("batches", [batch])
        log = tmp_path / "dagster-dev.log"
        with dagster_dev(str(home), str(tmp_path / "raw"), str(tmp_path / "out"), log) as (url, _):
            run_id = launch(url, "process_batch", {"dagster/partition": batch})
            deadline = time.monotonic() + 90
            while not jobs and time.monotonic() < deadline:
                time.sleep(0.5)
    assert len(jobs) == 1, f"no Job sent; log tail:\n{log.read_text()[-3000:]}"
    (job,) = jobs
    assert job["namespace"] == launcher["job_namespace"]
    assert job["metadata"]["labels"]["dagster/job"] == "process_batch"
    pod = job["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == launcher["service_account_name"]
    (container,) = pod["containers"]
    assert container["image"] == launcher["job_image"]
    assert container["imagePullPolicy"] == launcher["image_pull_policy"]
    assert container["args"][:3] == ["dagster", "api", "execute_run"] and run_id in container["args"][3]
    assert json.loads(container["args"][3])["__class__"] == "ExecuteRunArgs"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert {k: env.get(k) for k in ("COWORK_DATA_ROOT", "COWORK_RAW_ROOT")} == dict(
        v.split("=", 1) for v in launcher["env_vars"]
    )
    assert env["DAGSTER_RUN_JOB_NAME"] == "process_batch" and env["DAGSTER_HOME"] == launcher["dagster_home"]
    secrets = [e["secretRef"]["name"] for e in container.get("envFrom", []) if "secretRef" in e]
    assert secrets == launcher["env_secrets"]
    assert {"name": "raw", "mountPath": "/mnt/raw", "readOnly": True} in container["volumeMounts"]
    assert {"name": "raw", "persistentVolumeClaim": {"claimName": "cowork-raw", "readOnly": True}} in pod["volumes"]
    assert container["resources"] == launcher["run_k8s_config"]["container_config"]["resources"]
