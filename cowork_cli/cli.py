"""`cowork-curate`: generate synthetic data, run the pipeline headless, query the DuckDB file."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

from cowork_assets.settings import DEFAULT_DATA_ROOT, DEFAULT_RAW_ROOT
from cowork_assets.store.root_format import ensure_format
from cowork_assets.store.storage import check_root, is_remote, normalize_root
from cowork_assets.store.versions import DamagedState


class UsageError(Exception):
    pass


def _cmd_generate(args: argparse.Namespace) -> int:
    from cowork_assets.synthetic.generate import Rates, generate

    rates = Rates()
    for pair in args.rate:
        name, _, value = pair.partition("=")
        if name not in Rates.names():
            raise UsageError(f"unknown rate {name!r}; known: {', '.join(Rates.names())}")
        try:
            setattr(rates, name, float(value))
        except ValueError:
            raise UsageError(f"rate {name} must be a number, got {value!r}") from None
    started = time.monotonic()
    try:
        manifest = generate(
            Path(args.out),
            args.trajectories,
            args.batches,
            args.seed,
            rates,
            progress=lambda n: print(f"  {n}/{args.trajectories} trajectories", file=sys.stderr),
            **({"prefix": args.prefix} if args.prefix is not None else {}),
        )
    except (FileExistsError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    bad = sum(sum(b["quarantined"].values()) for b in manifest["batches"].values())
    print(
        f"wrote {args.trajectories} trajectories (+{bad} malformed lines) in {args.batches} batches "
        f"to {args.out} in {time.monotonic() - started:.1f}s; labels in {args.out}/labels.jsonl"
    )
    return 0


class _FirstLine(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = record.getMessage().splitlines()[0], ()
        return True


def _settings(args: argparse.Namespace):
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_assets.settings import SettingsError, parse_overrides

    try:
        overrides = parse_overrides(args.set)
    except SettingsError as exc:
        raise UsageError(str(exc)) from None
    for name in ("raw_root", "data_root"):
        if name in overrides:
            raise UsageError(f"use --{name.replace('_', '-')} instead of --set {name}=...")
    return CurateSettings(
        raw_root=str(Path(args.raw_root).resolve()), data_root=normalize_root(args.data_root), **overrides
    )


def _cmd_run(args: argparse.Namespace) -> int:
    from cowork_assets.datasets.suites import start_early as start_suites
    from cowork_assets.settings import roots_problem
    from cowork_assets.store.raw_files import discover_batches

    raw = Path(args.raw_root)
    found = discover_batches(raw) if raw.is_dir() else []
    if found:  # the gates' Great Expectations helper imports while this process imports the pipeline and checks
        start_suites()  # the batches: a run that only refreshes the corpus finds it ready at its gates
    settings = _settings(args)  # a bad --set first: it needs no folder
    if problem := roots_problem(args.raw_root, args.data_root):
        raise UsageError(problem)
    if not raw.is_dir():
        raise UsageError(f"--raw-root {raw} is not a directory")
    try:
        check_root(settings.root)
    except (ConnectionError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from None
    from cowork_cli.workers import start_early

    start_early(settings, [b for b in found if not args.batch or b in args.batch])
    from sqlalchemy.exc import DatabaseError

    from cowork_cli.runner import ensure_instance, materialize_all
    from cowork_cli.summary import print_summary

    home = Path(args.dagster_home or os.environ.get("DAGSTER_HOME") or ".dagster_home").resolve()
    if home.exists() and not home.is_dir():
        raise UsageError(f"--dagster-home {home} exists and is not a folder")
    if home.is_relative_to(raw.resolve()):  # its folder would be read as a batch of raw data
        raise UsageError(f"--dagster-home {home} is inside the raw root {raw}: keep the instance out of it")
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    first_lines = _FirstLine()  # a database driver's retries (Postgres) log its whole multi-line error each time
    logging.getLogger().addFilter(first_lines)
    try:
        instance = ensure_instance(home)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except DatabaseError as exc:  # a damaged SQLite file of the instance (runs.db, ...)
        cause = str(exc.orig or exc).splitlines()[0]
        raise DamagedState(
            f"the Dagster instance at {home} cannot be read ({cause}): move that folder aside to start a new run "
            "history (the data root keeps every output)"
        ) from None
    except Exception as exc:
        if type(exc).__name__ != "DagsterPostgresException":  # dagster-postgres is in the deploy extra only
            raise
        cause = str(exc.__cause__ or exc).splitlines()[0].removeprefix("(psycopg2.OperationalError) ")
        raise UsageError(
            f"the Dagster instance at {home} cannot reach its Postgres database ({cause}): check the server and the "
            f"storage settings in {home / 'dagster.yaml'}"
        ) from None
    finally:
        logging.getLogger().removeFilter(first_lines)
    if ensure_format(settings.root) == 1:
        print(f"the data root {settings.root} was written by an earlier release: its batches are redone once")
    print(f"materializing {raw} -> {settings.root} (Dagster instance: {home})")
    try:
        outcome = materialize_all(settings, instance, only=args.batch, force=args.force, debug=args.debug)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    print_summary(settings, outcome, home)
    errors = [c for c in outcome.failed_checks if c.endswith("(ERROR)")]
    return 1 if outcome.failed or errors else 0


def _db(args: argparse.Namespace) -> Path:
    """The DuckDB file to query: --db as given, else the data root's (its views rebuilt from an object store)."""
    from cowork_assets.store.storage import local_root
    from cowork_assets.warehouse.duckdb_file import queryable

    return Path(args.db) if args.db else queryable(args.data_root, local_root(args.data_root) / "cowork.duckdb")


def _cmd_sql(args: argparse.Namespace) -> int:
    from cowork_assets.warehouse.duckdb_file import named_query, query_names, query_params
    from cowork_cli.summary import format_rows

    if args.list:
        print("\n".join(query_names()))
        return 0
    if bool(args.statement) == bool(args.query):
        raise UsageError("give either a SQL statement or --query NAME (see --list)")
    try:
        sql = named_query(args.query) if args.query else args.statement
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    params = query_params(sql)
    for pair in args.param:
        name, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"--param expects NAME=VALUE, got {pair!r}")
        if args.query and name not in params:
            raise UsageError(f"query {args.query} takes no parameter {name!r}; it takes: {', '.join(params) or 'none'}")
        params[name] = value
    import duckdb

    from cowork_assets.warehouse.duckdb_file import QueryLimit, QueryRefused, first_rows

    if not 0 < args.timeout <= 86_400:
        raise UsageError(f"--timeout must be from 0 to 86400 seconds, got {args.timeout:g}")
    if not re.fullmatch(r"\d+(?:\.\d+)?\s*(?:[KMGT]i?)?B", args.memory_limit.strip(), re.IGNORECASE):
        raise UsageError(f"--memory-limit must be a size such as 500MB or 2GB, got {args.memory_limit!r}")
    from cowork_assets.runtime import scratch
    from cowork_assets.store.storage import local_root

    if (local := local_root(normalize_root(args.data_root))).is_dir():
        scratch.sweep(local)  # what a killed query spilled
        scratch.use(local)
    try:
        columns, rows, total = first_rows(
            _db(args), sql, params, normalize_root(args.data_root), args.timeout, args.memory_limit, limit=200
        )
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    except QueryRefused as exc:
        raise UsageError(f"refused: {exc}") from None
    except QueryLimit as exc:
        raise UsageError(f"query {exc}") from None
    except duckdb.Error as exc:
        raise UsageError(f"query failed: {str(exc).splitlines()[0]}") from None
    finally:
        scratch.release()
    print(format_rows(columns, rows, total=total))
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from cowork_assets.datasets.export import (
        jsonl,
        kto,
        llamafactory,
        openai_jsonl,
        output_problem,
        outputs,
        preference,
    )

    split = None if args.split == "all" else args.split
    write = {
        "jsonl": jsonl,
        "openai": openai_jsonl,
        "llamafactory": llamafactory,
        "preference": preference,
        "kto": kto,
    }[args.format]
    out = Path(args.out)
    root = normalize_root(args.data_root)
    if not is_remote(root) and out.resolve().is_relative_to(Path(root).resolve()):
        raise UsageError(f"refused: {out} is inside the data root {root}: an export never writes there")
    if args.format == "llamafactory" and (out.is_symlink() or out.exists() and not out.is_dir()):
        raise UsageError(f"{out} is not a folder: the llamafactory export writes a folder")
    if args.format == "llamafactory" and not out.exists():
        out.mkdir(parents=True)
    for path in outputs(args.format, out):
        if problem := output_problem(path, args.force):
            raise UsageError(problem)
    try:
        n = write(normalize_root(args.data_root), Path(args.out), split)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    dataset = "preference pairs" if args.format in ("preference", "kto") else "SFT dataset"
    print(f"exported {n} rows ({args.split}) of the current {dataset} to {args.out} as {args.format}")
    return 0


def _cmd_trace(args: argparse.Namespace) -> int:
    from cowork_assets.warehouse.trace import trace

    try:
        raw = Path(args.raw_root).expanduser().resolve()
        print("\n".join(trace(_db(args), normalize_root(args.data_root), args.id, raw)))
    except (FileNotFoundError, LookupError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    return 0


def _cmd_drop(args: argparse.Namespace) -> int:
    from cowork_assets.orchestration import verdict
    from cowork_assets.store.raw_files import batch_name_problem

    root = normalize_root(args.data_root)
    if problem := batch_name_problem(args.batch):
        raise UsageError(f"{args.batch!r} is not a batch name: {problem}")
    if not verdict.drop(root, args.batch):
        raise UsageError(f"no batch {args.batch!r} in {root}")
    print(
        f"dropped batch {args.batch} from {root}: its tables and manifest are gone, and the next run publishes "
        "without it (move its raw folder out of the raw root, or that run processes it again)"
    )
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cowork-curate", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="write deterministic synthetic batches with ground-truth labels")
    g.add_argument("--out", required=True, help="new folder to write batch sub-folders into")
    g.add_argument("--trajectories", type=int, default=300, help="valid trajectories to write [300]")
    g.add_argument("--batches", type=int, default=3, help="batch folders [3]")
    g.add_argument("--seed", type=int, default=7, help="random seed [7]")
    g.add_argument(
        "--prefix",
        help="batch folder names: <prefix>a, <prefix>b, ... [2026-11-29-teacher-]; e.g. 2026-12-03-teacher- for a "
        "new drop, generated apart and moved into the raw root",
    )
    g.add_argument("--rate", action="append", default=[], metavar="NAME=VALUE", help="override an injection rate")
    g.set_defaults(func=_cmd_generate)

    r = sub.add_parser("run", help="materialize every asset for every batch through Dagster (headless)")
    r.add_argument("--raw-root", default=DEFAULT_RAW_ROOT, help=f"folder of batch folders [{DEFAULT_RAW_ROOT}]")
    r.add_argument(
        "--data-root",
        default=DEFAULT_DATA_ROOT,
        help=f"output folder or object-store URI (s3://bucket/prefix) [{DEFAULT_DATA_ROOT}]",
    )
    r.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a setting")
    r.add_argument("--batch", action="append", default=[], help="only this batch (repeatable)")
    r.add_argument(
        "--force",
        action="store_true",
        help="reprocess batches even if already done with the same files, settings and code",
    )
    r.add_argument("--dagster-home", help="Dagster instance folder [$DAGSTER_HOME or ./.dagster_home]")
    r.set_defaults(func=_cmd_run)

    q = sub.add_parser("sql", help="query the DuckDB file: a SQL statement, or --query NAME from sql/queries")
    q.add_argument("statement", nargs="?", help="SQL to run")
    q.add_argument("--query", help="name of a query in sql/queries/")
    q.add_argument("--list", action="store_true", help="list the named queries")
    q.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="a query parameter ($NAME)")
    q.add_argument("--data-root", default=DEFAULT_DATA_ROOT, help=f"where the DuckDB file is [{DEFAULT_DATA_ROOT}]")
    q.add_argument("--db", help="path of the DuckDB file [<data-root>/cowork.duckdb]")
    q.add_argument("--timeout", type=float, default=60.0, help="stop the query after this many seconds [60]")
    q.add_argument("--memory-limit", default="2GB", help="DuckDB's memory limit for the query [2GB]")
    q.set_defaults(func=_cmd_sql)

    t = sub.add_parser("trace", help="the chain of a sample: raw line, curation, findings, exclusion or publication")
    t.add_argument("id", help="sample or trajectory id (a LIKE pattern such as ops-00042%% traces several)")
    t.add_argument("--data-root", default=DEFAULT_DATA_ROOT, help=f"where the DuckDB file is [{DEFAULT_DATA_ROOT}]")
    t.add_argument("--db", help="path of the DuckDB file [<data-root>/cowork.duckdb]")
    t.add_argument("--raw-root", default=DEFAULT_RAW_ROOT, help=f"where the raw lines are read [{DEFAULT_RAW_ROOT}]")
    t.set_defaults(func=_cmd_trace)

    d = sub.add_parser("drop", help="remove a processed batch's tables from the data root, so runs publish without it")
    d.add_argument("batch", help="the batch (its folder's name)")
    d.add_argument("--data-root", default=DEFAULT_DATA_ROOT, help=f"the data root [{DEFAULT_DATA_ROOT}]")
    d.set_defaults(func=_cmd_drop)

    e = sub.add_parser("export", help="export the current published SFT or preference dataset to a trainer's format")
    e.add_argument(
        "--format",
        required=True,
        choices=["jsonl", "openai", "llamafactory", "preference", "kto"],
        help="jsonl: the SFT rows with arguments and tools as objects (--out FILE); openai: fine-tuning JSONL "
        "(--out FILE); llamafactory: ShareGPT + dataset_info.json (--out DIR); preference: the preference pairs in "
        "TRL's format (--out FILE); kto: the pairs unpaired, prompt/completion/label (--out FILE)",
    )
    e.add_argument("--out", required=True, help="output file (jsonl, openai) or folder (llamafactory)")
    e.add_argument("--force", action="store_true", help="replace an existing output file (never a link or device)")
    e.add_argument("--split", default="train", choices=["train", "validation", "all"], help="which split [train]")
    e.add_argument(
        "--data-root", default=DEFAULT_DATA_ROOT, help=f"where the datasets are published [{DEFAULT_DATA_ROOT}]"
    )
    e.set_defaults(func=_cmd_export)
    for command in sub.choices.values():
        command.add_argument("--debug", action="store_true", help="print tracebacks of failures in full")
    return p


def _terminate(signum, frame):
    raise SystemExit(128 + signum)  # unwinds like Ctrl-C: the batch workers are stopped on the way out


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"cowork-curate {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except DamagedState as exc:  # a pointer of the data root that names nothing: one line, and the repair
        print(f"cowork-curate {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except (OSError, MemoryError) as exc:  # a full disk, a lost mount: one line, the traceback with --debug
        if args.debug:
            raise
        what = "no space left on device" if getattr(exc, "errno", None) == errno.ENOSPC else type(exc).__name__
        print(f"cowork-curate {args.command}: error: {what}: {exc} (--debug shows the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
