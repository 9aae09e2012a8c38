"""Benchmark holdouts: the tasks a benchmark keeps for testing never reach a dataset, under their id or another.

A holdout list is a file (or every file of a folder) naming a benchmark's tasks:
* a split file, `{"train": [...], "test": [...]}` (tau2-bench's `split_tasks.json` shape): its `test` tasks are held
  out, its `train` tasks are the training side (they always land in `train`, never in `validation`);
* a list of task or instance ids: a text file with one id per line, a JSON list (of ids, or of objects with an
  `instance_id`, `task_id` or `id`), JSON Lines of such objects (a SWE-bench dataset dump), or a JSON object with
  `ids`: every task named is held out. An object's `problem_statement` (or `text`, `request`, `instruction`) is the
  task's text, for decontamination by text.
Each list names its benchmark and how the benchmark's ids become this pipeline's task ids (its id scheme): in a
JSON object's `benchmark` and `task_id` keys (e.g. `"tau2-{domain}-{id}"`), or in a text file's `# benchmark:` and
`# task_id:` header lines. A split file named `<domain>_split_tasks.json`, or `split_tasks.json` in a `<domain>/`
folder, is tau2-bench's (`tau2-{domain}-{id}`, as the tau2 reader names tasks). Ids are otherwise taken as they
are (SWE-bench instance ids are the coding formats' task ids).

Shipped lists, named by the `holdout` setting like paths: `tau2` (tau2-bench's official airline and retail splits
with each task's text, MIT; `holdouts/tau2/`) and `swebench` (SWE-bench Verified's and Lite's test instance ids, MIT;
`holdouts/swebench/`).

Ids match after the same normalisation on both sides (`normal_id`: spaces dropped, leading zeros of numbers dropped,
case folded), so a log that writes a tau2 task id `" 5"` or `"005"` names task 5.

Decontamination, as NeMo Curator's and datatrove's measure it: each held-out task's own text (a list's task text, and
the request of its run in the corpus) is cut into word 13-grams; a task whose request *contains* at least `overlap`
of them is held out too (a benchmark task under another id), with the share and one matched span. Containment is
over the benchmark side, so a harness's long instructions around a task do not dilute it, and the harness text
itself is never the benchmark's: 13-grams that many of the corpus's requests share (`common_tasks`, a harness's
template) are left out of a text taken from the corpus, and 13-grams that many held-out texts share (a benchmark's
boilerplate) out of every text. A benchmark's own training tasks are never held out by text: its tasks are often
variants of one another (tau2's retail 31 and 32 share 86% of their 13-grams).
"""

from __future__ import annotations

import re
from collections import Counter
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


def normal_id(task_id: pl.Expr) -> pl.Expr:
    """A task id as both sides compare it: case folded, no spaces, numbers without leading zeros."""
    return task_id.str.to_lowercase().str.replace_all(r"\s+", "").str.replace_all(r"(^|[^0-9])0+([0-9])", "${1}${2}")


def ngrams(text: str, n: int = NGRAM) -> list[tuple[str, ...]]:
    """The word n-grams of a text (lower-cased words), in order."""
    words = WORD.findall(text.lower())
    return [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]


def common_tasks(tasks: int) -> int:
    """Requests of more than this many corpus tasks sharing a 13-gram make it a harness's, not a task's."""
    return max(3, tasks // 100)


COMMON_HELD_OUT = 5  # held-out texts sharing a 13-gram: the benchmark's boilerplate ("You are detail-oriented ...")
MIN_NGRAMS = 3  # a held-out text needs this many distinctive 13-grams to be matched by text


def held_out(tasks: pl.DataFrame, lists: pl.DataFrame, overlap: float) -> pl.DataFrame:
    """task_id, benchmark, reason (`listed`, `contains_test_text`), detail of each task of `tasks` (task_id, request:
    one row per task) a list holds out, or whose request contains `overlap` of a held-out task's text (module
    docstring)."""
    test = lists.filter(pl.col("side") == "test").with_columns(key=normal_id(pl.col("task_id")))
    tasks = tasks.with_columns(key=normal_id(pl.col("task_id")))
    by_id = tasks.join(test.select("key", "benchmark", "source", listed_as=pl.col("task_id")), on="key")
    listed = by_id.select(
        "task_id",
        "benchmark",
        reason=pl.lit("listed"),
        detail=pl.format("test task {} of {} ({})", "listed_as", "benchmark", "source"),
    )
    train = lists.filter(pl.col("side") == "train").select(key=normal_id(pl.col("task_id")))
    found = _containing(tasks, by_id, test, tasks.join(train, on="key"), overlap)
    return pl.concat([listed.cast(HELD_OUT_SCHEMA), found]).unique("task_id", keep="first").sort("task_id")


def _containing(
    tasks: pl.DataFrame, by_id: pl.DataFrame, test: pl.DataFrame, training: pl.DataFrame, overlap: float
) -> pl.DataFrame:
    """The tasks (not held out by id, nor a benchmark's own training tasks: a benchmark's tasks are often variants of
    one another) whose request contains `overlap` of a held-out task's 13-grams: of its list text, or of its run's
    request in the corpus."""
    texts = [  # (held-out task, benchmark, its 13-grams in order, whether taken from the corpus)
        *(
            (t, b, ngrams(x), False)
            for t, b, x in test.drop_nulls("text").select("task_id", "benchmark", "text").iter_rows()
        ),
        *((t, b, ngrams(r or ""), True) for t, b, r in by_id.select("listed_as", "benchmark", "request").iter_rows()),
    ]
    held_df = Counter(g for *_, grams, _ in texts for g in set(grams))
    # Only the held-out texts' 13-grams are looked for in the corpus: each request is kept as those it contains.
    requests = [(t, held_df.keys() & set(ngrams(r or ""))) for t, r in tasks.select("task_id", "request").iter_rows()]
    corpus_df = Counter(g for _, grams in requests for g in grams)
    common = common_tasks(len(requests))
    index: dict[tuple, list[int]] = {}
    kept = []
    for i, (_, _, grams, from_corpus) in enumerate(texts):
        own = [g for g in dict.fromkeys(grams) if held_df[g] <= COMMON_HELD_OUT]
        kept.append([g for g in own if not (from_corpus and corpus_df[g] > common)])
        for g in kept[i]:
            index.setdefault(g, []).append(i)
    listed, rows = set(by_id["task_id"]) | set(training["task_id"]), []
    for task_id, grams in requests:
        hits = Counter(i for g in grams for i in index.get(g, ())) if task_id not in listed else {}
        shares = {i: n / len(kept[i]) for i, n in hits.items() if len(kept[i]) >= MIN_NGRAMS}
        best = max(shares, key=lambda i: (shares[i], -i), default=None)
        if best is not None and shares[best] >= overlap:
            span = " ".join(next(g for g in kept[best] if g in grams))
            detail = (
                f'{shares[best]:.2f} of test task {texts[best][0]}\'s {NGRAM}-grams are in its request, e.g. "{span}"'
            )
            rows.append((task_id, texts[best][1], "contains_test_text", detail))
    return pl.DataFrame(rows, schema=HELD_OUT_SCHEMA, orient="row")


def corpus_held_out(root: str, entries: list[str], overlap: float) -> pl.DataFrame:
    """The held-out tasks of the corpus under `root` (`held_out` of its task packages and the lists `entries`)."""
    from cowork_assets.store.registry import TABLES

    tasks = TABLES["task_packages"].scan(root).select("task_id", "request").unique("task_id", keep="first")
    return held_out(tasks.collect().sort("task_id"), load(entries), overlap)


def training_side(lists: pl.DataFrame) -> pl.Series:
    """The task ids a benchmark's split puts on its training side (and no list holds out)."""
    train = lists.filter(pl.col("side") == "train").select("task_id")
    return train.join(lists.filter(pl.col("side") == "test"), on="task_id", how="anti")["task_id"]
