"""Tool observations as a terminal shows them: coding agents' shell output holds ANSI escape sequences (colours,
cursor moves, window titles) and carriage-return progress lines, which a model should not learn to expect.

In a curated observation: CSI and OSC sequences (and other two-character escapes) are removed, a carriage return
overwrites the line back to its start (a CRLF is a newline), and any other C0 control character but tab and
newline becomes U+FFFD. `terminal_chars` counts, per message, the characters removed or replaced.
"""

from __future__ import annotations

import polars as pl

ESCAPES = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
OVERWRITTEN = r"[^\n]*\r"  # a line up to its last carriage return (CRLFs already newlines)
OTHER_CONTROL = r"[\x00-\x08\x0B\x0C\x0E-\x1F\x7F]"
ANY_CONTROL = r"[\x00-\x08\x0B-\x1F\x7F]"  # what makes a text need this (carriage return and escape included)
REPLACEMENT = "\ufffd"


def normalised(frame: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    """`frame` (rows with role, content) with its tool messages' terminal text normalised and `terminal_chars`."""
    content = pl.col("content")
    needs = frame.filter(pl.col("role") == "tool", content.str.contains(ANY_CONTROL))
    out = frame.with_columns(terminal_chars=pl.lit(0, pl.Int64))
    if not needs.height:
        return out
    stripped = (
        content.str.replace_all(ESCAPES, "")
        .str.replace_all("\r\n", "\n", literal=True)
        .str.replace_all(OVERWRITTEN, "")
    )
    fixed = (
        needs.select(*key, "chars", before=content.str.len_chars(), stripped=stripped)
        .with_columns(
            removed=pl.col("before") - pl.col("stripped").str.len_chars(),
            replaced=pl.col("stripped").str.count_matches(OTHER_CONTROL),
        )
        .select(
            *key,
            content=pl.col("stripped").str.replace_all(OTHER_CONTROL, REPLACEMENT),
            chars=pl.col("chars") - pl.col("removed"),  # a replaced character keeps its place
            terminal_chars=(pl.col("removed") + pl.col("replaced")).cast(pl.Int64),
        )
    )
    return out.update(fixed, on=key)
