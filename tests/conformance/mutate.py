"""Real logs with their structure broken, to find what a reader did not foresee.

Each case copies one batch folder and mutates a few of its JSON and JSON Lines files as a log of another version, a
hand edit or a half-written file might differ: keys dropped, values replaced by another type, list items dropped or
repeated. Ingesting it must account for every record the independent recount counts, with no `reader_error` (a
reader that failed on the file: a bug to fix in that reader). `test_mutations.py` runs a few seeds over this
corpus; for more:

    .venv/bin/python -m tests.conformance.mutate tests/conformance --seeds 200
"""

from __future__ import annotations

import argparse
import copy
import random
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from cowork_assets.ingest.batch import ingest_batch
from cowork_assets.ingest.formats import recount_batch
from cowork_assets.store.registry import TABLES

SWAPS = (None, 0, 7, -1, 1.5, "", "x", True, [], {}, [1, "a"], {"a": 1}, [[{}]], "\x00", "9" * 30)
MUTATED = (".json", ".jsonl", ".traj")


def _paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        yield from _paths(inner, (*path, key))


def mutate(doc: Any, rng: random.Random, edits: int) -> Any:
    """`doc` with `edits` random edits of its keys, items and values (a new value when it is the root)."""
    for _ in range(edits):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            return copy.deepcopy(rng.choice(SWAPS))
        *parents, key = rng.choice(paths)
        parent = doc
        for step in parents:
            parent = parent[step]
        roll = rng.random()
        if roll < 0.45:
            del parent[key]
        elif roll < 0.55 and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        else:
            parent[key] = copy.deepcopy(rng.choice(SWAPS))
    return doc


def mutate_file(path: Path, rng: random.Random) -> None:
    """A JSON document mutated whole; else about half the JSON lines of a file, one edit each."""
    data = path.read_bytes()
    try:
        path.write_bytes(orjson.dumps(mutate(orjson.loads(data), rng, 3)))
        return
    except orjson.JSONDecodeError:
        pass
    lines = []
    for line in data.split(b"\n"):
        try:
            doc = orjson.loads(line)
        except orjson.JSONDecodeError:
            lines.append(line)
            continue
        lines.append(orjson.dumps(mutate(doc, rng, 1)) if rng.random() < 0.5 else line)
    path.write_bytes(b"\n".join(lines))


def problems(folder: Path, seed: int, work: Path) -> list[str]:
    """What is wrong with ingesting `folder` mutated by `seed`: records unaccounted for, or a reader's failure."""
    rng = random.Random(seed)
    raw = work / "raw"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(folder, raw / "b")
    files = sorted(f for f in (raw / "b").rglob("*") if f.is_file() and f.suffix in MUTATED)
    for path in rng.sample(files, min(len(files), rng.randint(1, 3))):
        mutate_file(path, rng)
    report = ingest_batch(raw, "b", str(work / "data"))
    out = [] if report.balanced else [f"{report.raw_records} records, {report.parsed} parsed + {report.quarantined}"]
    if (recounted := recount_batch(raw, "b")) != report.raw_records:
        out.append(f"the recount finds {recounted} records, ingest {report.raw_records}")
    quarantine = TABLES["quarantine"].read(str(work / "data"), "b")
    out += [
        f"{f}: {detail}"
        for f, reason, detail in quarantine.select("raw_file", "reason", "detail").rows()
        if reason == "reader_error"
    ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="a folder of batch folders (e.g. tests/conformance)")
    parser.add_argument("--seeds", type=int, default=50, help="mutated copies of each batch folder")
    args = parser.parse_args()
    folders = sorted(p for p in args.root.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))
    found = 0
    with tempfile.TemporaryDirectory() as work:
        for folder in folders:
            for seed in range(args.seeds):
                for problem in problems(folder, seed, Path(work)):
                    found += 1
                    print(f"{folder.name} seed {seed}: {problem}")
    print(f"{found} problem(s) in {len(folders)} folders x {args.seeds} seeds")
    raise SystemExit(1 if found else 0)


if __name__ == "__main__":
    main()
