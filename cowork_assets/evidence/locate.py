"""Locate evidence values: where the agent first uses each, and every earlier message showing it.

Each message is searched for the values of its trajectory: a literal search (in polars) for each value's
longest alphanumeric run rejects most (message, value) pairs, and the rest are matched exactly,
boundary-aware, for character offsets in the original text, by polars where the match is a plain search
and by `values.matches` where it is not. A value's use is its first match in an assistant's message; the
sightings kept are those before it.
"""

from __future__ import annotations

import itertools

import polars as pl

from cowork_assets.evidence.schemas import SHOWN
from cowork_assets.values import ALNUM, GROUPED_DIGITS, matches, searched_plainly, sightings, ungrouped

OCCURRENCE_SCHEMA = {
    "trajectory_id": pl.String,
    "norm": pl.String,
    "message_index": pl.Int32,
    "role": pl.String,
    "offset": pl.Int64,
    "length": pl.Int64,
    "message_chars": pl.Int64,
}
LOCATION_SCHEMA = {
    "trajectory_id": pl.String,
    "norm": pl.String,
    "used_at": pl.Int32,
    "found_at": pl.Int32,
    "found_role": pl.String,
    "found_offset": pl.Int64,
    "found_length": pl.Int64,
    "found_message_chars": pl.Int64,
    "shown_at": pl.List(SHOWN),
}


def searchable(messages: pl.DataFrame) -> pl.DataFrame:
    """Messages with the text a value can appear in: content, plus tool-call arguments for the assistant."""
    args = pl.col("tool_calls").list.eval(pl.element().struct.field("arguments")).list.join("\n")
    return messages.select(
        "trajectory_id",
        "message_index",
        "role",
        "content",
        text=pl.when(pl.col("role") == "assistant")
        .then(pl.concat_str([pl.col("content").fill_null(""), args], separator="\n"))
        .otherwise(pl.col("content").fill_null("")),
    )


# Matching is on ASCII alphanumeric boundaries, so wherever a value occurs, each maximal alphanumeric run of the value
# is also a whole run of the normalised text, or of the text as written (`anchored_in`). A value is matched exactly
# only in the messages that contain its longest run, its anchor: polars looks for each anchor in every message of its
# trajectory (a literal search per (message, value) pair, ~10 pairs per message). (Splitting every text into runs
# with a regex and joining them on the anchors was measured 35-50% slower; the same search as a Python loop over the
# pairs, 15% slower.)
RUN = r"[0-9a-z]+"
PAIRS_AT_ONCE = 1_000_000
# A trajectory with more (message, value) pairs than this is searched with one automaton of its anchors instead.
LARGE_TRAJECTORY = 20_000


def _anchor(norm: pl.Expr) -> pl.Expr:
    runs = norm.str.extract_all(RUN)
    return runs.list.eval(pl.element().sort_by(pl.element().str.len_chars(), descending=True)).list.first()


def _is_run(text: str, word: str, at: int) -> bool:
    """Is `word` (found at `at`, or -1) a whole alphanumeric run somewhere from there on in `text`?"""
    n = len(word)
    while at >= 0:
        if (at == 0 or text[at - 1] not in ALNUM) and (at + n == len(text) or text[at + n] not in ALNUM):
            return True
        at = text.find(word, at + 1)
    return False


def anchored_in(text: str, lowered: bool, ntext: str | None, anchor: str, memo: dict) -> bool:
    """Is `anchor` a whole alphanumeric run of the message (`_texts`' columns): of its normalised text, or, where
    normalising changed it, of its lower-cased text as written? Removing digit grouping glues a compact JSON list of
    numbers (`[7000000,7000013]`) into one run, where each number was a run of its own and `matches` finds it.
    `memo`: the caller's, for this message."""
    normalised = text if ntext is None else ntext
    if _is_run(normalised, anchor, normalised.find(anchor)):
        return True
    if ntext is None:
        return False
    low = _lowered(text, lowered, memo)
    return _is_run(low, anchor, low.find(anchor))


def _lowered(text: str, lowered: bool, memo: dict) -> str:
    """The message's text lower-cased: `text` itself if it is (`lowered`), else made once per message (`memo`)."""
    if lowered:
        return text
    if "lowered" not in memo:
        memo["lowered"] = text.lower()
    return memo["lowered"]


def _texts(keys: pl.DataFrame, messages: pl.DataFrame) -> pl.DataFrame:
    """The messages of trajectories with values, in conversation order: (trajectory_id, message_index, role,
    text, lowered, ntext). `lowered` says that `text` is already lower-cased (ASCII text, lowered by polars);
    `ntext` is the normalised text when it differs from `text` (grouping commas, non-ASCII), else null."""
    texts = searchable(messages).join(keys.select("trajectory_id").unique(), on="trajectory_id", how="semi")
    ascii_ = pl.col("text").str.len_bytes() == pl.col("text").str.len_chars()
    texts = texts.with_columns(low=pl.col("text").str.to_lowercase(), lowered=ascii_).with_row_index("i")
    # Few texts have digit grouping (~2%): only they go through the two regex passes that remove it.
    grouped = texts.filter(pl.col("low").str.contains(GROUPED_DIGITS)).select("i", ungrouped=ungrouped(pl.col("low")))
    return (
        texts.join(grouped, on="i", how="left", maintain_order="left")
        .with_columns(ntext=pl.coalesce("ungrouped", "low"), text=pl.when("lowered").then("low").otherwise("text"))
        .select(
            "trajectory_id",
            "message_index",
            "role",
            "text",
            "lowered",
            ntext=pl.when(pl.col("ntext") != pl.col("text")).then("ntext"),
        )
        .sort("trajectory_id", "message_index")
    )


def _pairs(texts: pl.DataFrame, anchored: pl.DataFrame) -> pl.DataFrame:
    """Each (message, value) pair whose message contains the value's anchor (`texts`: a slice of `scan`'s, a large
    trajectory whole in it)."""
    searched = texts.select("row", "trajectory_id", "large", searched=pl.coalesce("ntext", "text"))
    key = pl.coalesce("anchor", "norm")  # no run: containment of the value itself
    large = searched.filter("large")["trajectory_id"].unique(maintain_order=True)
    small = searched.filter(~pl.col("large"))
    found = [
        small.join(anchored, on="trajectory_id")
        .filter(pl.col("searched").str.contains(key, literal=True))
        .select("row", "norm", "anchor"),
        *(_searched_at_once(searched, anchored, tid) for tid in large),
    ]
    return texts.join(pl.concat(found), on="row").select(
        "trajectory_id", "message_index", "role", "text", "lowered", "ntext", "norm", "anchor"
    )


def _searched_at_once(searched: pl.DataFrame, anchored: pl.DataFrame, tid: str) -> pl.DataFrame:
    """(row, norm, anchor) of one large trajectory: every anchor sought in each message in one pass (polars'
    Aho-Corasick over the trajectory's anchors), so the work grows with messages plus values, not their product."""
    values = anchored.filter(pl.col("trajectory_id") == tid).with_columns(key=pl.coalesce("anchor", "norm"))
    keys = values["key"].unique().to_list()
    hits = (
        searched.filter(pl.col("trajectory_id") == tid)
        .select("row", key=pl.col("searched").str.extract_many(keys, overlapping=True))
        .explode("key")
        .drop_nulls("key")
        .unique()
    )
    return hits.join(values, on="key").select("row", "norm", "anchor")


# Pairs in the engine's reach: ASCII text (lower-cased) and value, and no digit grouping to see past. Where the
# value occurs once, or an assistant's first sighting has its boundaries, polars decides; the rest go to `matches`.
_PLAIN = pl.col("lowered") & pl.col("ntext").is_null() & searched_plainly(pl.col("text"), pl.col("norm"))


def _matched_in_python(pairs: pl.DataFrame) -> list[tuple]:
    """OCCURRENCE_SCHEMA rows of the pairs the engine left: an assistant's pair its first match only. A message is
    taken once with all its values (its text made a Python string once, not once per value)."""
    rows = []
    by_message = pairs.group_by("trajectory_id", "message_index", maintain_order=True).agg(
        pl.col("role", "text", "lowered", "ntext").first(), "norm", "anchor"
    )
    for tid, index, role, text, lowered, ntext, norms, anchors in by_message.iter_rows():
        memo = {}
        for norm, anchor in zip(norms, anchors, strict=True):
            if anchor is not None and not anchored_in(text, lowered, ntext, anchor, memo):
                continue
            found = matches(norm, text, _lowered(text, lowered, memo), memo)
            for start, length in itertools.islice(found, 1) if role == "assistant" else found:
                rows.append((tid, norm, index, role, start, length, len(text)))
    return rows


def scan(keys: pl.DataFrame, messages: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """For distinct (trajectory_id, norm) keys: (first use per key, every occurrence before that use)."""
    anchored = keys.select("trajectory_id", "norm").unique().with_columns(anchor=_anchor(pl.col("norm")))
    # (message, value) pairs are made a slice of messages at a time: a trajectory with 20,000 messages and
    # 19,000 values (the hostile corpus has one) would make 380 M of them. A large trajectory makes none: its
    # anchors are sought at once (`_searched_at_once`), and it is kept whole in one slice, so that their automaton
    # is built once, not once per slice of it (the work grew with messages times values squared).
    texts = (
        _texts(keys, messages)
        .with_row_index("row")
        .join(anchored.group_by("trajectory_id").len("values"), on="trajectory_id", maintain_order="left")
        .with_columns(large=pl.len().over("trajectory_id") * pl.col("values") > LARGE_TRAJECTORY)
        .with_columns(slice=pl.when("large").then(0).otherwise("values").cum_sum() // PAIRS_AT_ONCE)
    )
    found = []
    for part in texts.partition_by("slice", maintain_order=True):
        pairs = _pairs(part, anchored)
        plain = sightings(pairs.filter(_PLAIN))
        # decided here: no occurrence; one, bounded; an assistant's first, bounded (its use)
        decided = (pl.col("count") == 0) | pl.col("bounded") & (
            (pl.col("count") == 1) | (pl.col("role") == "assistant")
        )
        found.append(
            plain.filter(decided, pl.col("count") > 0).select(
                "trajectory_id",
                "norm",
                "message_index",
                "role",
                offset="at",
                length=pl.col("norm").str.len_bytes().cast(pl.Int64),
                message_chars=pl.col("text").str.len_bytes().cast(pl.Int64),
            )
        )
        rest = pl.concat([pairs.filter(~_PLAIN), plain.filter(~decided).select(pairs.columns)])
        found.append(pl.DataFrame(_matched_in_python(rest), schema=OCCURRENCE_SCHEMA, orient="row"))
    found = pl.concat(found) if found else pl.DataFrame(schema=OCCURRENCE_SCHEMA)
    # a value's use is its first match in an assistant's message; what follows it is irrelevant
    used = (
        found.filter(pl.col("role") == "assistant")
        .group_by("trajectory_id", "norm")
        .agg(used_at=pl.col("message_index").min())
        .sort("trajectory_id", "norm")
    )
    occurrences = (
        found.filter(pl.col("role") != "assistant")
        .join(used, on=["trajectory_id", "norm"], how="left")
        .filter(pl.col("used_at").is_null() | (pl.col("message_index") < pl.col("used_at")))
        .select(list(OCCURRENCE_SCHEMA))
        .sort("trajectory_id", "norm", "message_index", "offset")
    )
    return used, occurrences


def locate(items: pl.DataFrame, messages: pl.DataFrame) -> pl.DataFrame:
    """One row per distinct (trajectory_id, norm) of `items`: first use, and first location before it."""
    keys = items.select("trajectory_id", "norm").unique(maintain_order=True)
    used, occurrences = scan(keys, messages)
    return locations(keys, used, occurrences)


def locations(keys: pl.DataFrame, used: pl.DataFrame, occurrences: pl.DataFrame) -> pl.DataFrame:
    """LOCATION_SCHEMA rows of `keys` from their first uses (trajectory_id, norm, used_at) and the occurrences
    before them (OCCURRENCE_SCHEMA)."""
    first = (
        occurrences.sort("message_index", "offset")
        .group_by("trajectory_id", "norm", maintain_order=True)
        .agg(pl.all().first(), shown_at=pl.struct("message_index", "offset", "length"))
        .rename(
            {
                "message_index": "found_at",
                "role": "found_role",
                "offset": "found_offset",
                "length": "found_length",
                "message_chars": "found_message_chars",
            }
        )
    )
    return (
        keys.join(used, on=["trajectory_id", "norm"], how="left", maintain_order="left")
        .join(first, on=["trajectory_id", "norm"], how="left", maintain_order="left")
        .with_columns(pl.col("shown_at").fill_null(pl.lit([], dtype=pl.List(SHOWN))))
        .select(list(LOCATION_SCHEMA))
    )


def shown(evidence: pl.DataFrame) -> pl.DataFrame:
    """The occurrences `scan` found, back from the evidence table: one row per match before first use."""
    return (
        evidence.select("trajectory_id", "norm", "shown_at")
        .unique(["trajectory_id", "norm"], maintain_order=True)
        .explode("shown_at")
        .drop_nulls("shown_at")
        .unnest("shown_at")
    )


STATUS = (
    pl.when(pl.col("used_at").is_null())
    .then(pl.lit("unused"))
    .when(pl.col("found_at").is_null())
    .then(pl.lit("produced"))
    .when(pl.col("found_role") == "tool")
    .then(pl.lit("at_risk"))
    .otherwise(pl.lit("given"))
)
