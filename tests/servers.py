"""Real servers on loopback for the deployment tests, started and stopped by the tests themselves: moto's S3 server,
a PostgreSQL cluster and a Redis server from the Debian packages (in a temporary folder, on a free port), Celery
workers as docs/deployment.md starts them; and a stand-in Kubernetes API that keeps the Jobs it is sent."""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cowork_cli.workers import environment


@contextlib.contextmanager
def s3_server(bucket: str, work_dir: Path) -> Iterator:
    """A moto S3 server with one bucket, and the AWS environment pointing at it: yields a boto3 client."""
    moto_server = pytest.importorskip("moto.server")
    import boto3
    from werkzeug.serving import make_server

    from cowork_assets.store import storage

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    # moto's S3 app alone: moto's ThreadedMotoServer works out the service of every request first, which costs as
    # much as serving it.
    app, handler = moto_server.create_backend_app("s3"), moto_server.MotoRequestHandler
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    env = {
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
        "AWS_EC2_METADATA_DISABLED": "true",
        "COWORK_WORK_DIR": str(work_dir),
    }
    try:
        with environment(**env):
            storage._remote_filesystem.cache_clear()
            boto3.client("s3").create_bucket(Bucket=bucket)
            yield boto3.client("s3")
    finally:
        server.shutdown()
        storage._remote_filesystem.cache_clear()


def _postgres_bin() -> Path | None:
    found = shutil.which("initdb") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))[::-1]), None)
    return Path(found).resolve().parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def postgres_server() -> Iterator[dict[str, str]]:
    """A PostgreSQL cluster on 127.0.0.1 (trust authentication, user `dagster`): yields the DAGSTER_PG_* variables
    docs/deploy/dagster.yaml reads. Run as the `postgres` user when this process is root (PostgreSQL refuses root),
    in a temporary folder of its own (pytest's are private to this user)."""
    binaries = _postgres_bin()
    if binaries is None:
        pytest.skip("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    folder = Path(tempfile.mkdtemp(prefix="cowork-pg-"))
    if as_user:
        shutil.chown(folder, "postgres")
    data, port = folder / "data", _free_port()
    run = lambda *args: subprocess.run([*as_user, *args], check=True, capture_output=True, timeout=120)  # noqa: E731
    run(str(binaries / "initdb"), "-D", str(data), "-U", "dagster", "--auth=trust", "--no-sync")
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    run(str(binaries / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start")
    try:
        yield {
            "DAGSTER_PG_HOST": "127.0.0.1",
            "DAGSTER_PG_PORT": str(port),
            "DAGSTER_PG_DB": "postgres",
            "DAGSTER_PG_USER": "dagster",
            "DAGSTER_PG_PASSWORD": "",
        }
    finally:
        run(str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A Redis server on 127.0.0.1 with nothing saved to disk: yields its URL (the Celery broker)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("Redis is not installed (Debian: apt-get install redis-server)")
    port = _free_port()
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not _listening(port):
            if time.monotonic() > deadline or server.poll() is not None:
                pytest.fail("redis-server did not start")
            time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.kill()
        server.wait()


@contextlib.contextmanager
def celery_workers(names: tuple[str, ...], home: str, log_dir: Path, **env: str) -> Iterator[list[subprocess.Popen]]:
    """Celery workers started as docs/deployment.md starts them (docs/deploy/celery-worker.yaml, one run at a time
    each, the environment's bin folder on PATH), with the instance in `home`: yields them, each the leader of a
    session holding all its processes, and stops them at the end. `env` is the rest of the environment a worker
    machine has (the broker, the COWORK_* variables)."""
    from tests.conftest import ROOT

    started, bin_folder = [], ROOT / ".venv" / "bin"
    try:
        for name in names:
            command = [str(bin_folder / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app"]
            command += ["-y", str(ROOT / "docs" / "deploy" / "celery-worker.yaml"), "-n", name, "--"]
            command += ["--concurrency=1"]
            with open(log_dir / f"{name}.log", "w") as out:
                started.append(
                    subprocess.Popen(
                        command,
                        cwd=ROOT,
                        env={**os.environ, "PATH": f"{bin_folder}:{os.environ['PATH']}", "DAGSTER_HOME": home, **env},
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        yield started
    finally:
        for worker in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()


@contextlib.contextmanager
def kubernetes_api(work_dir: Path) -> Iterator[tuple[Path, list[dict]]]:
    """A stand-in for a Kubernetes API server on loopback that accepts the Jobs it is sent and keeps them:
    (a kubeconfig file pointing at it, the Jobs created so far as sent, each with its namespace). No cluster
    runs them; what is tested is the Job a run launcher renders and sends."""
    import json
    import re
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    created: list[dict] = []
    jobs = re.compile(r"^/apis/batch/v1/namespaces/([^/]+)/jobs$")

    class Api(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the http.server hook's name)
            found = jobs.match(self.path.split("?")[0])
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if found:
                created.append({**body, "namespace": found.group(1)})
            self._reply(201 if found else 404, body if found else {"kind": "Status", "code": 404})

        def do_GET(self):  # noqa: N802
            self._reply(404, {"kind": "Status", "code": 404})

        def _reply(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", _free_port()), Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kubeconfig = work_dir / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(  # JSON is YAML
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "loopback", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}],
                "users": [{"name": "test", "user": {"token": "not-a-secret"}}],
                "contexts": [{"name": "loopback", "context": {"cluster": "loopback", "user": "test"}}],
                "current-context": "loopback",
            }
        )
    )
    try:
        yield kubeconfig, created
    finally:
        server.shutdown()
