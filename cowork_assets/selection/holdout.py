"""Benchmark holdouts: the tasks a benchmark keeps for testing never reach a dataset, under their id or another.

The lists a `holdout` setting names are read by `cowork_assets.holdouts`. Ids match after the same normalisation on
both sides (`normal_id`: spaces dropped, leading zeros of numbers dropped, case folded), so a log
that writes a tau2 task id `" 5"` or `"005"` names task 5.

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
from functools import lru_cache

import polars as pl

from cowork_assets import holdouts

NGRAM = 13
WORD = re.compile(r"\w+")
HELD_OUT_SCHEMA = {"task_id": pl.String, "benchmark": pl.String, "reason": pl.String, "detail": pl.String}


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


def corpus_held_out(root: str, entries: list[str], overlap: float, corpus: str) -> pl.DataFrame:
    """The held-out tasks of the corpus under `root` (`held_out` of its task packages and the lists `entries`).
    `corpus`: the corpus's version (`verdict.corpus_version`). Found once while it and the lists stay as they are:
    each dataset of a refresh asks, and every task's request is read."""
    return _corpus_held_out(root, tuple(entries), overlap, corpus, holdouts.state(entries))


@lru_cache(maxsize=4)
def _corpus_held_out(root: str, entries: tuple[str, ...], overlap: float, *_state) -> pl.DataFrame:
    from cowork_assets.store.registry import TABLES

    tasks = TABLES["task_packages"].scan(root).select("task_id", "request").unique("task_id", keep="first")
    return held_out(tasks.collect().sort("task_id"), holdouts.load(list(entries)), overlap)


def training_side(lists: pl.DataFrame) -> pl.Series:
    """The task ids a benchmark's split puts on its training side (and no list holds out)."""
    train = lists.filter(pl.col("side") == "train").select("task_id")
    return train.join(lists.filter(pl.col("side") == "test"), on="task_id", how="anti")["task_id"]
