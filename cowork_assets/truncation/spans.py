"""Kept spans of a truncated observation, and how a truncated text is rendered.

A span is a half-open [start, end) range of the original text. Every gap between kept spans is
replaced by a visible marker that says how many characters were cut: `[...1234 chars cut...]`.
Strategies build their span columns with `span_list` and `positional`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import polars as pl

Span = tuple[int, int]
SPAN = pl.Struct({"start": pl.Int64, "end": pl.Int64})
MARKER = "[...{n} chars cut...]"
MARKER_RE = re.compile(r"\[\.\.\.(\d+) chars cut\.\.\.\]")


def marker(n: int) -> str:
    return MARKER.format(n=n)


def merge(spans: Iterable[Span]) -> list[Span]:
    """Sorted, non-overlapping, non-adjacent spans covering the same characters."""
    out: list[Span] = []
    for start, end in sorted(spans):
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def total(spans: Sequence[Span]) -> int:
    return sum(e - s for s, e in spans)


def widen(cores: Sequence[Span], context: int, length: int) -> list[Span]:
    return merge((max(0, s - context), min(length, e + context)) for s, e in cores)


def _widened_total(cores: Sequence[Span], context: int, length: int) -> int:
    """total(widen(cores, context, length)) without building the spans (cores sorted and disjoint)."""
    covered, reach = 0, 0
    for s, e in cores:
        s, e = max(s - context, reach), min(e + context, length)
        if e > s:
            covered, reach = covered + e - s, e
    return covered


def intersect(a: Sequence[Span], b: Sequence[Span]) -> list[Span]:
    return merge((max(s1, s2), min(e1, e2)) for s1, e1 in a for s2, e2 in b if min(e1, e2) > max(s1, s2))


def evidence_spans(length: int, allowance: int, cores: Sequence[Span], context: int) -> tuple[list[Span], int]:
    """Spend `allowance` on windows around the evidence first, then on the head.

    Returns (spans, overflow): overflow > 0 only when the evidence alone needs more than the allowance,
    in which case exactly the evidence is kept.
    """
    cores = merge((max(0, s), min(length, e)) for s, e in cores)
    if total(cores) >= allowance:
        return cores, total(cores) - allowance
    # The widest context whose windows still fit (window size grows with context): usually the full one.
    lo, hi = (context, context) if _widened_total(cores, context, length) <= allowance else (0, context - 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if _widened_total(cores, mid, length) <= allowance else (lo, mid - 1)
    windows = widen(cores, lo, length)
    head = allowance - total(windows)
    spans = merge([(0, min(head, length)), *windows])
    while total(spans) < min(allowance, length):  # the head overlapped a window: extend it by the slack
        head += min(allowance, length) - total(spans)
        spans = merge([(0, min(head, length)), *windows])
    return spans, 0


def reach() -> pl.Expr:
    """Over (row, start, end) spans sorted by row and start: how far each span's earlier spans in its row reach
    (below its start if it is its row's first, null for the first of all). A running maximum over the whole frame,
    each row's ends shifted past every earlier row's: a running maximum per row, `.over`, is far slower."""
    base = pl.col("row").cast(pl.Int64) * (pl.col("end").max() + 1)
    return (pl.col("end") + base).cum_max().shift(1) - base


def merged(spans: pl.DataFrame) -> pl.DataFrame:
    """`merge` for many rows at once: (row, start, end) spans, merged row by row, sorted by row and start."""
    reached = reach()
    return (
        spans.filter(pl.col("end") > pl.col("start"))
        .sort("row", "start")
        .with_columns(group=(reached.is_null() | (pl.col("start") > reached)).cum_sum())
        .group_by("group", maintain_order=True)
        .agg(pl.col("row").first(), pl.col("start").min(), pl.col("end").max())
        .drop("group")
    )


def render(text: str, spans: Sequence[Span]) -> str:
    """The kept spans of `text` with a marker in every gap (including a cut tail)."""
    pieces, pos = [], 0
    for start, end in spans:
        if start > pos:
            pieces.append(marker(start - pos))
        pieces.append(text[start:end])
        pos = end
    if pos < len(text):
        pieces.append(marker(len(text) - pos))
    return "".join(pieces)


def span_list(*pairs: tuple[pl.Expr, pl.Expr]) -> pl.Expr:
    """A list of kept spans from (start, end) expressions (built as an array: `concat_list` of two structs
    is far slower)."""
    return pl.concat_arr(pl.struct(start=s.cast(pl.Int64), end=e.cast(pl.Int64)) for s, e in pairs).arr.to_list()


def allowance_of(allowance: int | pl.Expr) -> pl.Expr:
    """The allowance as an expression: one for all rows, or each row's (the sweep cuts at several at once)."""
    return allowance if isinstance(allowance, pl.Expr) else pl.lit(allowance, pl.Int64)


def positional(observations: pl.DataFrame, kept_spans: pl.Expr) -> pl.DataFrame:
    """The rows of a cut by position only: never any overflow."""
    return observations.with_columns(kept_spans=kept_spans, overflow_chars=pl.lit(0, pl.Int64))
