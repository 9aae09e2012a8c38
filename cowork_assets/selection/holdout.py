"""Benchmark holdouts: the tasks a benchmark keeps for testing never reach a dataset, under their id or another.

A holdout list is a file (or every file of a folder) naming a benchmark's tasks:
* a split file, `{"train": [...], "test": [...]}` (tau2-bench's `split_tasks.json` shape): its `test` tasks are held
  out, its `train` tasks are the training side (they always land in `train`, never in `validation`);
* a list of task or instance ids: a text file with one id per line, a JSON list (of ids, or of objects with an
  `instance_id`, `task_id` or `id`), JSON Lines of such objects (a SWE-bench dataset dump), or a JSON object with
  `ids`: every task named is held out. An object's `problem_statement` (or `text`, `request`, `instruction`) is the
  task's text, for the near-duplicate rule.
Each list names its benchmark and how the benchmark's ids become this pipeline's task ids (its id scheme): in a
JSON object's `benchmark` and `task_id` keys (e.g. `"tau2-{domain}-{id}"`), or in a text file's `# benchmark:` and
`# task_id:` header lines. A split file named `<domain>_split_tasks.json`, or `split_tasks.json` in a `<domain>/`
folder, is tau2-bench's (`tau2-{domain}-{id}`, as the tau2 reader names tasks). Ids are otherwise taken as they
are (SWE-bench instance ids are the coding formats' task ids).

Shipped lists, named by the `holdout` setting like paths: `tau2` (tau2-bench's official airline and retail splits,
MIT; `holdouts/tau2/`).

Near duplicates: a task whose request shares at least `overlap` of its word 13-grams with the text of a held-out
task (the requests of the held-out tasks in the corpus, and the texts the lists carry) is held out too, so a test
task under a new id does not slip through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import orjson
import polars as pl

HOLDOUTS = Path(__file__).resolve().parent / "holdouts"
NGRAM = 13
ID_KEYS = ("instance_id", "task_id", "id")
TEXT_KEYS = ("problem_statement", "text", "request", "instruction")
SPLIT_FILE = "split_tasks.json"
LIST_SUFFIXES = (".json", ".jsonl", ".txt", ".csv", ".tsv", ".lst")
HEADER = re.compile(r"#\s*(benchmark|task_id)\s*:\s*(\S+)")
WORD = re.compile(r"\w+")

LISTS_SCHEMA = {
    "benchmark": pl.String,
    "task_id": pl.String,
    "side": pl.String,
    "text": pl.String,
    "source": pl.String,
}
HELD_OUT_SCHEMA = {"task_id": pl.String, "benchmark": pl.String, "reason": pl.String, "detail": pl.String}


class HoldoutError(ValueError):
    """A holdout list that cannot be read, in words a user can act on."""


@dataclass(frozen=True)
class Scheme:
    benchmark: str
    task_id: str = "{id}"

    def __call__(self, raw_id, domain: str = "") -> str:
        return self.task_id.format(id=str(raw_id).strip(), domain=domain)


def files_of(entries: list[str]) -> list[Path]:
    """The list files the `holdout` setting names: shipped lists by name, files, and the files of folders."""
    out = []
    for entry in entries:
        path = HOLDOUTS / entry if (HOLDOUTS / entry).is_dir() and "/" not in entry else Path(entry).expanduser()
        if path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(LIST_SUFFIXES))
        elif path.is_file():
            out.append(path)
        else:
            shipped = ", ".join(sorted(p.name for p in HOLDOUTS.iterdir() if p.is_dir()))
            raise HoldoutError(f"holdout {entry!r} is neither a shipped list ({shipped}) nor a file or folder")
    return out


def load(entries: list[str]) -> pl.DataFrame:
    """benchmark, task_id, side (`test` held out, `train` the training side), text, source: every list entry."""
    rows = [row for path in files_of(entries) for row in _rows(path)]
    frame = pl.DataFrame(rows, schema=LISTS_SCHEMA, orient="row")
    return frame.unique(["task_id", "side"], keep="first", maintain_order=True)


def _rows(path: Path) -> list[tuple]:
    try:
        raw = path.read_bytes()
        if path.name.endswith(".jsonl"):
            data = [orjson.loads(line) for line in raw.splitlines() if line.strip()]
        elif path.name.endswith(".json"):
            data = orjson.loads(raw)
        else:
            data = raw.decode()
    except (OSError, ValueError) as exc:
        raise HoldoutError(f"holdout list {path} cannot be read: {exc}") from None
    source = path.name
    if isinstance(data, str):
        return _text_rows(data, path, source)
    if isinstance(data, dict) and isinstance(data.get("test"), list):
        scheme, domain = _split_scheme(data, path)
        return [
            (scheme.benchmark, scheme(_id(item), domain), side, _text(item), source)
            for side in ("test", "train")
            for item in data.get(side) or []
            if _id(item) is not None
        ]
    if isinstance(data, dict) and isinstance(data.get("ids"), list):
        scheme, data = Scheme(str(data.get("benchmark") or path.stem), str(data.get("task_id") or "{id}")), data["ids"]
    else:
        scheme = Scheme(path.stem)
    if not isinstance(data, list):
        raise HoldoutError(
            f"holdout list {path} is neither a split file ({{train, test}}), a list of ids nor an object with `ids`"
        )
    return [(scheme.benchmark, scheme(_id(i)), "test", _text(i), source) for i in data if _id(i) is not None]


def _text_rows(text: str, path: Path, source: str) -> list[tuple]:
    header = dict(HEADER.findall(text))
    scheme = Scheme(header.get("benchmark", path.stem), header.get("task_id", "{id}"))
    ids = [line.split(",")[0].split("\t")[0].strip() for line in text.splitlines()]
    return [(scheme.benchmark, scheme(i), "test", None, source) for i in ids if i and not i.startswith("#")]


def _split_scheme(data: dict, path: Path) -> tuple[Scheme, str]:
    """A split file's benchmark and id scheme: its own keys, else tau2-bench's, its domain from its name."""
    if path.name.endswith(SPLIT_FILE):
        domain = path.name.removesuffix(SPLIT_FILE).rstrip("_") or path.parent.name
        default = Scheme("tau2", "tau2-{domain}-{id}")
    else:
        domain, default = "", Scheme(path.stem)
    return Scheme(str(data.get("benchmark") or default.benchmark), str(data.get("task_id") or default.task_id)), domain


def _id(item) -> str | None:
    if isinstance(item, str | int):
        return str(item)
    if isinstance(item, dict):
        return next((str(item[k]) for k in ID_KEYS if isinstance(item.get(k), str | int)), None)
    return None


def _text(item) -> str | None:
    return next((item[k] for k in TEXT_KEYS if isinstance(item.get(k), str)), None) if isinstance(item, dict) else None


def shingles(text: str, n: int = NGRAM) -> set[int]:
    """Hashes of the word n-grams of a text (lower-cased words)."""
    words = WORD.findall(text.lower())
    return {hash(tuple(words[i : i + n])) for i in range(len(words) - n + 1)}


def held_out(tasks: pl.DataFrame, lists: pl.DataFrame, overlap: float) -> pl.DataFrame:
    """task_id, benchmark, reason (`listed`, `near_duplicate`), detail of each task of `tasks` (task_id, request:
    one row per task) a list holds out, or whose request is a near duplicate of a held-out task's text."""
    test = lists.filter(pl.col("side") == "test")
    listed = tasks.join(test, on="task_id").select(
        "task_id", "benchmark", reason=pl.lit("listed"), detail=pl.format("test task of {} ({})", "benchmark", "source")
    )
    texts = pl.concat(
        [
            tasks.join(test, on="task_id").select("task_id", "benchmark", text="request"),
            test.filter(pl.col("text").is_not_null()).select("task_id", "benchmark", "text"),
        ]
    ).unique(["task_id", "text"], keep="first")
    index: dict[int, set[int]] = {}  # shingle -> held-out texts that have it
    owners = []
    for i, (task_id, benchmark, text) in enumerate(texts.iter_rows()):
        owners.append((task_id, benchmark))
        for s in shingles(text or ""):
            index.setdefault(s, set()).add(i)
    near = []
    for task_id, request in tasks.join(listed, on="task_id", how="anti").select("task_id", "request").iter_rows():
        mine = shingles(request or "")
        hits: dict[int, int] = {}
        for s in mine:
            for i in index.get(s, ()):
                hits[i] = hits.get(i, 0) + 1
        if hits:
            best = max(hits, key=lambda i: (hits[i], -i))
            share = hits[best] / len(mine)
            if share >= overlap:
                of, benchmark = owners[best]
                detail = f"{share:.2f} of its word {NGRAM}-grams are in held-out task {of}'s text"
                near.append((task_id, benchmark, "near_duplicate", detail))
    found = pl.DataFrame(near, schema=HELD_OUT_SCHEMA, orient="row")
    return pl.concat([listed.cast(HELD_OUT_SCHEMA), found]).sort("task_id")


def corpus_held_out(root: str, entries: list[str], overlap: float) -> pl.DataFrame:
    """The held-out tasks of the corpus under `root` (`held_out` of its task packages and the lists `entries`)."""
    from cowork_assets.store.registry import TABLES

    tasks = TABLES["task_packages"].scan(root).select("task_id", "request").unique("task_id", keep="first")
    return held_out(tasks.collect().sort("task_id"), load(entries), overlap)


def training_side(lists: pl.DataFrame) -> pl.Series:
    """The task ids a benchmark's split puts on its training side (and no list holds out)."""
    train = lists.filter(pl.col("side") == "train").select("task_id")
    return train.join(lists.filter(pl.col("side") == "test"), on="task_id", how="anti")["task_id"]
