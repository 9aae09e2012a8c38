"""What counts as an evidence value, how values are normalised, and how they are matched in text.

The rule (documented in docs/curation.md, tested in tests/evidence/test_evidence.py):

* Normalisation: case-folded; a number also matches with its thousands separators removed
  (`1,234.50` matches `1234.50`).
* Never evidence: booleans, nulls, empty strings, values under 3 characters, and numbers with fewer
  than 3 digits (a quantity `1`, a count `10` matches by coincidence almost anywhere).
* Values a check names *for the grader to look for* — explicit `evidence` lists and
  `keywords_present` keywords — count with only those exclusions (`polyester` counts).
* Values taken from structured data — `tool_called.args` leaves, `state_equals.value`,
  `distinct_items` key values — count only when they look like a record rather than a choice: at
  least 4 characters and containing a digit or one of `@ # / :` or a space (ids, codes, emails,
  links, dates, amounts, titles), and not an `enum` value of the tool's parameter schema. So a cabin
  class `economy`, a status `approved` or a flag `no` do not count; `#W6390527`, `2024-05-21`,
  `ana@x.example` and `Draft the budget table` do.
* Grounding values are identifier-like tokens in the assistant's tool-call arguments (the same
  record-like rule, without phrases), and file paths with an extension (`src/app/fields.py`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import polars as pl

MIN_CHARS = 3
MIN_RECORD_CHARS = 4
MIN_DIGITS = 3
NUMBER = r"^[+-]?[\d,]*\.?\d+$"  # a number, grouped or not (Python and polars regex)
_NUMBER = re.compile(NUMBER)
_RECORD_MARK = re.compile(r"[\d@#/:\s]")
# Identifier-like tokens inside JSON argument text (polars regex: no look-arounds): links, emails, file
# paths with an extension (what coding agents open and edit), and tokens holding a digit.
IDENTIFIER_PATTERN = (
    r"https?://[^\s\"'\\<>]+"
    r"|[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
    r"|/?(?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_-][A-Za-z0-9_.-]*\.[A-Za-z][A-Za-z0-9]{0,7}"
    r"|#?[A-Za-z0-9][A-Za-z0-9_.:/-]*[0-9][A-Za-z0-9_.:/-]*"
)


def normalise(value: str) -> str:
    """Case-folded; thousands separators dropped from numbers."""
    text = value.strip().casefold()
    return text.replace(",", "") if _NUMBER.match(text) else text


def scalar_text(value: Any) -> str | None:
    """The text form of a JSON scalar, or None for booleans, nulls and containers."""
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        return None
    return value if isinstance(value, str) else repr(value) if isinstance(value, float) else str(value)


def leaves(value: Any) -> Iterator[Any]:
    """Scalar leaves of a JSON value, depth first."""
    if isinstance(value, dict):
        for v in value.values():
            yield from leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from leaves(v)
    else:
        yield value


def _too_small(norm: str) -> bool:
    if len(norm) < MIN_CHARS:
        return True
    return bool(_NUMBER.match(norm)) and sum(c.isdigit() for c in norm) < MIN_DIGITS


def named_value(value: Any) -> str | None:
    """A value a check names for the grader (keyword, explicit evidence): kept unless too small."""
    text = scalar_text(value)
    return text.strip() if text is not None and not _too_small(normalise(text)) else None


def record_value(value: Any, enums: frozenset[str] = frozenset()) -> str | None:
    """A value from structured data: kept only if it looks like a record, not a choice."""
    text = scalar_text(value)
    if text is None:
        return None
    norm = normalise(text)
    if _too_small(norm) or norm in enums:
        return None
    if len(norm) < MIN_RECORD_CHARS or not _RECORD_MARK.search(norm):
        return None
    return text.strip()


def grounding_filter(token: pl.Expr) -> pl.Expr:
    """Polars form of the record rule for identifier tokens (which never contain spaces)."""
    digits = token.str.count_matches(r"[0-9]")
    numeric = token.str.contains(r"^[+-]?[0-9,]*\.?[0-9]+$")
    return (token.str.len_chars() >= MIN_RECORD_CHARS) & (~numeric | (digits >= MIN_DIGITS))


@lru_cache(maxsize=65536)
def pattern(norm: str) -> re.Pattern:
    """Case-insensitive, boundary-aware pattern for a normalised value; numbers allow separators."""
    if _NUMBER.match(norm):
        body = r",?".join(re.escape(c) if not c.isdigit() else c for c in norm)
        body = body.replace(r",?\.,?", r"\.")
    else:
        body = re.escape(norm)
    left = r"(?<![0-9a-z])" if norm[:1].isalnum() else ""
    right = r"(?![0-9a-z])" if norm[-1:].isalnum() else ""
    return re.compile(left + body + right, re.IGNORECASE)


ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyz")
# A comma a number's pattern may skip: between a digit (or the sign) and a digit. The comma comes first
# so that the regex engine jumps from comma to comma (with the lookbehind first it tries every position).
_GROUPING_COMMA = re.compile(r",(?<=[0-9+-],)(?=[0-9])")


def _without_grouping(lowered: str) -> tuple[str, list[int]]:
    """A lower-cased text without its grouping commas, and where each removed comma sat in what is left."""
    cuts = [m.start() for m in _GROUPING_COMMA.finditer(lowered)] if "," in lowered else []
    return (_GROUPING_COMMA.sub("", lowered) if cuts else lowered), [c - k for k, c in enumerate(cuts)]


def matches(norm: str, text: str, lowered: str | None = None, memo: dict | None = None) -> Iterator[tuple[int, int]]:
    """(offset, length) of each boundary-aware, non-overlapping match of a normalised value in text.

    The same matches as `pattern(norm).finditer(text)`, found with `str.find` on the lower-cased
    text (no regex to compile per value): a number is looked for in the text with its grouping
    commas removed, and offsets are mapped back. Non-ASCII values and texts whose length changes when
    lower-cased go through the pattern. `lowered` is `text.lower()` when the caller has it already; `memo`, a dict
    the caller keeps for this text while it looks for many values in it, keeps the text without its grouping commas
    (made once, not once per number: a message of 10,000 calls made it 10,000 times).
    """
    if not norm:  # an empty value shows nowhere
        return
    lowered = text.lower() if lowered is None else lowered
    if not norm.isascii() or len(lowered) != len(text):
        yield from ((m.start(), m.end() - m.start()) for m in pattern(norm).finditer(text))
        return
    if _NUMBER.match(norm):
        memo = {} if memo is None else memo
        if "without_grouping" not in memo:
            memo["without_grouping"] = _without_grouping(lowered)
        searched, shifts = memo["without_grouping"]
    else:
        searched, shifts = lowered, []

    def original(i: int) -> int:
        return i + bisect_right(shifts, i) if shifts else i

    n, left, right = len(norm), norm[0].isalnum(), norm[-1].isalnum()
    i = searched.find(norm)
    while i >= 0:
        start, end = original(i), original(i + n - 1) + 1
        if (not left or start == 0 or lowered[start - 1] not in ALNUM) and (
            not right or end == len(lowered) or lowered[end] not in ALNUM
        ):
            yield start, end - start
            i = searched.find(norm, i + n)
        else:
            i = searched.find(norm, i + 1)


def find(text: str | None, norm: str) -> tuple[int, int] | None:
    """(offset, length) of the first boundary-aware match of a normalised value in text."""
    return next(matches(norm, text), None) if text else None


GROUPED_DIGITS = r"([0-9]),([0-9]{3})"  # digit grouping, which `ungrouped` removes


def ungrouped(lowered: pl.Expr) -> pl.Expr:
    """Polars: lower-cased text in the same normal form as values, its digit grouping removed."""
    for _ in range(2):  # "1,234,567": each pass removes every other separator
        lowered = lowered.str.replace_all(GROUPED_DIGITS, "${1}${2}")
    return lowered


# The same matching in the engine, where it is a plain search (polars `str.find`): the rest go to `matches`.
_EDGE = "[0-9a-z]"  # where a value's end is alphanumeric, the text's character beside it must not be


def searched_plainly(text: pl.Expr, norm: pl.Expr) -> pl.Expr:
    """Whether `matches(norm, text)` is a plain search of `text`, an ASCII text already lower-cased: an ASCII value,
    and no grouping comma to see past (a number in a text with a comma)."""
    return (norm.str.len_bytes() == norm.str.len_chars()) & ~(
        norm.str.contains(NUMBER) & text.str.contains(",", literal=True)
    )


def sightings(frame: pl.DataFrame, text: str = "text", norm: str = "norm") -> pl.DataFrame:
    """`frame` (where `searched_plainly`) with `at`, the first occurrence of the value in the text (null: none),
    `count`, how many there are without overlapping, and `bounded`, whether the first has the boundaries `matches`
    asks for. One occurrence, bounded, is the one match; a first one bounded is the first match; the rest is for
    `matches` to decide."""
    value, body, at = pl.col(norm), pl.col(text), pl.col("at")
    n = value.str.len_bytes()
    left = ~value.str.contains(f"^{_EDGE}") | (at == 0) | ~body.str.slice(at - 1, 1).str.contains(_EDGE)
    right = (
        ~value.str.contains(f"{_EDGE}$")
        | (at + n == body.str.len_bytes())
        | ~body.str.slice(at + n, 1).str.contains(_EDGE)
    )
    return frame.with_columns(
        at=body.str.find(value, literal=True).cast(pl.Int64), count=body.str.count_matches(value, literal=True)
    ).with_columns(bounded=left & right)
