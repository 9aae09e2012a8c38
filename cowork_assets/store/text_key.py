"""A text's key for remembering work done on it: two seeded 64-bit hashes and its length in bytes.

20 bytes however long the text is (a collision among millions of texts is not to be expected), and
computed by polars for a whole column at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

KEY_SCHEMA = {"key_a": pl.UInt64, "key_b": pl.UInt64, "key_n": pl.UInt32}
KEY = list(KEY_SCHEMA)


def text_key(column: str) -> dict[str, pl.Expr]:
    """The key columns of the text column `column`, as `with_columns(**text_key(...))` takes them."""
    text = pl.col(column)
    return {"key_a": text.hash(1), "key_b": text.hash(2), "key_n": text.str.len_bytes()}


def keyed(texts: Sequence[str] | pl.Series, name: str = "text") -> pl.DataFrame:
    """The texts (column `name`) with their keys."""
    return pl.DataFrame({name: texts}, schema={name: pl.String}).with_columns(**text_key(name))


class TextMemo:
    """Values worked out once per distinct text and found again by its key: the runs of a task repeat its
    texts, within a batch and from batch to batch."""

    def __init__(self, values: dict[str, pl.DataType]):
        self.known = pl.DataFrame(schema=KEY_SCHEMA | values)

    def unknown(self, texts: pl.DataFrame) -> pl.DataFrame:
        """The distinct rows of `texts` (as `keyed` makes them) with no values yet, in order of first appearance."""
        return texts.unique(KEY, maintain_order=True).join(self.known, on=KEY, how="anti", maintain_order="left")

    def learn(self, keys: pl.DataFrame, values: pl.DataFrame) -> None:
        """Remember `values`, row by row, for the texts whose keys `keys` holds."""
        self.known = pl.concat([self.known, pl.concat([keys.select(KEY), values], how="horizontal")], rechunk=False)

    def look_up(self, texts: pl.DataFrame) -> pl.DataFrame:
        """Each row's key and values, in the order of `texts`."""
        return texts.select(KEY).join(self.known, on=KEY, how="left", maintain_order="left")
