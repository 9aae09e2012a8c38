"""A text's key for remembering work done on it: two seeded 64-bit hashes and its length in bytes.

20 bytes however long the text is (a collision among millions of texts is not to be expected), and
computed by polars for a whole column at once.
"""

from __future__ import annotations

import polars as pl

KEY_SCHEMA = {"key_a": pl.UInt64, "key_b": pl.UInt64, "key_n": pl.UInt32}
KEY = list(KEY_SCHEMA)


def text_key(column: str) -> dict[str, pl.Expr]:
    """The key columns of the text column `column`, as `with_columns(**text_key(...))` takes them."""
    text = pl.col(column)
    return {"key_a": text.hash(1), "key_b": text.hash(2), "key_n": text.str.len_bytes()}
