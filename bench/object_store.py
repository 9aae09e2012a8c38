"""The requests a run makes to an object-store data root, counted where they arrive.

`python -m bench.object_store [--trajectories N] [--batches B]` generates a synthetic corpus, runs `cowork-curate
run` on it with the data root in a bucket of moto's S3 server (the dev dependencies' S3 stand-in, on loopback, in
this process) and prints the requests the server received from every process of the run (its batch workers
included): in all, per method, and per kind of key. On a real bucket each is a round trip of tens of milliseconds;
the figure to watch is how it grows with the batches.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

BUCKET = "bench"


def _kind(method: str, path: str, query: str) -> str:
    """A request's method and key with its batch, run and bucket names taken out."""
    if not path.strip("/").count("/"):
        return f"{method} (list the bucket{', one level' if 'delimiter' in query else ''})"
    key = re.sub(r"batch-\d+|\d{4}-\d\d-\d\d-[\w-]+", "<batch>", path.split("/", 2)[2])
    return f"{method} {re.sub(r'/[0-9a-f-]{16,}[^/]*', '/<id>', key)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=80)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--top", type=int, default=15, help="kinds of request to print")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-object-store-") as work:  # raw files, instance, work folder
        _measure(args, Path(work))


def _measure(args: argparse.Namespace, work: Path) -> None:
    import boto3
    from moto.server import MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    from cowork_assets.synthetic.generate import generate
    from cowork_cli.cli import main as cli

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app, counted = create_backend_app("s3"), Counter()

    def counting(environ, start_response):
        counted[_kind(environ["REQUEST_METHOD"], environ["PATH_INFO"], environ.get("QUERY_STRING", ""))] += 1
        return app(environ, start_response)

    server = make_server("127.0.0.1", 0, counting, threaded=True, request_handler=MotoRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ |= {
        "AWS_ENDPOINT_URL": "http://{}:{}".format(*server.server_address[:2]),
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
        "AWS_EC2_METADATA_DISABLED": "true",
        "COWORK_WORK_DIR": str(work / "work"),
    }
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    generate(work / "raw", trajectories=args.trajectories, batches=args.batches, seed=5)
    counted.clear()  # the bucket's creation
    started = time.monotonic()
    with contextlib.redirect_stdout(open(os.devnull, "w")):  # noqa: SIM115 - the run's own summary is not the figure
        status = cli(
            ["run", "--raw-root", str(work / "raw"), "--data-root", f"s3://{BUCKET}/curated"]
            + ["--dagster-home", str(work / "home")]
        )
    seconds = time.monotonic() - started
    server.shutdown()
    methods = Counter()
    for kind, n in counted.items():
        methods[kind.split(" ", 1)[0]] += n
    print(f"\n{args.trajectories} trajectories in {args.batches} batches: exit status {status}, {seconds:.1f} s")
    print(f"requests: {counted.total():,} ({', '.join(f'{m} {n:,}' for m, n in methods.most_common())})")
    print(f"per batch: {counted.total() / args.batches:,.0f}")
    for kind, n in counted.most_common(args.top):
        print(f"{n:>7,}  {kind}")


if __name__ == "__main__":
    main()
