"""Evidence from code edits: the text an edit copies from an earlier view of the file.

A coding agent's replace edit names the text to replace, and a `sed` substitution the text to match; the agent
took both from an observation that showed the file. They are grounding items (source `edit`), used by the call
that makes the edit:

* `old_str` of any call (`str_replace_editor` of SWE-agent and OpenHands), `search` of SWE-agent's `edit`;
* the pattern of a `sed` substitution in a shell command (`sed -i 's/OLD/NEW/' file`), unescaped, without the
  `^` / `$` anchors;
* the line numbers of a line-range view or edit (`view_range`, `line_number`, `start_line`, `end_line`,
  `insert_line`; SWE-agent's `goto N`, `open FILE N`, `edit N:M` commands), from 100 on (smaller ones are in
  every view), as `line N`: shown where an earlier observation prints that line's number (`   650<TAB>`,
  `650:`, `file:650:` of `grep -n`, `line 650`).

File viewers print a line number before each line (`cat -n` and OpenHands: `   650\\t...`; SWE-agent's window:
`1475:...`), so text of several lines never appears verbatim in the view. Each observation is also searched
with those prefixes taken out, and a match is mapped back to the characters it spans in the observation, so
truncation keeps (or the audit reports losing) exactly the lines the edit depends on.
"""

from __future__ import annotations

import re
from bisect import bisect_right

import orjson
import polars as pl

from cowork_assets.evidence.extract import ITEM_SCHEMA
from cowork_assets.evidence.locate import OCCURRENCE_SCHEMA, locations
from cowork_assets.values import matches, normalise

EDIT_ITEM_SCHEMA = {**ITEM_SCHEMA, "used_at": pl.Int32}  # an edit item and the call that uses it
SEARCH_ARGUMENT = {"old_str": None, "search": "edit"}  # argument -> the only tool it is an edit of (None: any)
SED = re.compile(r"""\bsed\b[^|;&\n]*?\s(['"])(?:\d+(?:,\d+)?)?s([^\w\s\\])(.*?)(?<!\\)\2""", re.S)
LINE_NUMBER = re.compile(r"^(?: *\d+\t|\d+:)", re.M)
REMOVED = re.compile(r"^(?: *\d+\t|\d+:)|\r(?=\n)", re.M)  # from a numbered view: the prefixes, and CRs of CRLFs
MIN_EDIT_CHARS = 4  # non-space characters of an edit's search text
LINE_ARGUMENTS = ("view_range", "line_number", "start_line", "end_line", "insert_line")
LINE_COMMANDS = re.compile(r"^\s*(?:goto\s+(\d+)|open\s+\S+\s+(\d+)|edit\s+(\d+):(\d+))", re.M)
MIN_LINE = 100


def line_norm(number: int) -> str:
    return f"line {number}"


def _line_pattern(number: str) -> re.Pattern:
    return re.compile(rf"(?m)^ *{number}\t|^{number}:|:{number}:|\bline {number}\b", re.IGNORECASE)


def sed_patterns(command: str) -> list[str]:
    """The search patterns of the `sed` substitutions in a shell command, unescaped."""
    out = []
    for found in SED.finditer(command):
        text = re.sub(r"\\(.)", r"\1", found.group(3))
        out.append(text.removeprefix("^").removesuffix("$"))
    return out


def _line_numbers(args: dict) -> list[int]:
    numbers = []
    for key in LINE_ARGUMENTS:
        value = args.get(key)
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, int) and not isinstance(v, bool):
                numbers.append(v)
    if isinstance(args.get("command"), str):
        numbers += [int(n) for m in LINE_COMMANDS.finditer(args["command"]) for n in m.groups() if n]
    return [n for n in numbers if n >= MIN_LINE]


def _searches(tool: str, arguments: str) -> list[tuple[str, str]]:
    """(value, norm) of each edit item of one call."""
    try:
        args = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return []
    if not isinstance(args, dict):
        return []
    found = [
        v for k, only in SEARCH_ARGUMENT.items() if (v := args.get(k)) and isinstance(v, str) and only in (None, tool)
    ]
    if isinstance(args.get("command"), str) and "sed" in args["command"]:
        found += sed_patterns(args["command"])
    texts = [(v, normalise(v)) for v in found if len("".join(v.split())) >= MIN_EDIT_CHARS]
    return texts + [(str(n), line_norm(n)) for n in _line_numbers(args)]


def edit_items(tool_calls: pl.DataFrame) -> pl.DataFrame:
    """One row per (trajectory, edit item): EDIT_ITEM_SCHEMA, `used_at` the first call that edits with it."""
    keys = "|".join(["old_str", "search", *LINE_ARGUMENTS])
    calls = tool_calls.filter(
        pl.col("arguments").str.contains(rf'"(?:{keys})"\s*:')
        | pl.col("arguments").str.contains(r"\bsed\b|\b(?:goto|open|edit)\s")
    )
    rows = [
        (tid, value, norm, index)
        for tid, index, tool, arguments in calls.select(
            "trajectory_id", "message_index", "tool_name", "arguments"
        ).iter_rows()
        for value, norm in _searches(tool, arguments)
    ]
    frame = pl.DataFrame(
        rows,
        schema={"trajectory_id": pl.String, "value": pl.String, "norm": pl.String, "used_at": pl.Int32},
        orient="row",
    )
    return (
        frame.sort("trajectory_id", "used_at", maintain_order=True)
        .unique(["trajectory_id", "norm"], keep="first", maintain_order=True)
        .select(
            "trajectory_id",
            check_id=pl.lit("grounding"),
            check_type=pl.lit("grounding"),
            source=pl.lit("edit"),
            value="value",
            norm="norm",
            used_at="used_at",
        )
        .cast(EDIT_ITEM_SCHEMA)
    )


def without_line_numbers(text: str) -> tuple[str, list[int], list[int]] | None:
    """A numbered file view without its line-number prefixes (and carriage returns), and where each piece of it
    starts in the view and in the text without them (None: not a numbered view, fewer than two numbered lines)."""
    if len(LINE_NUMBER.findall(text, 0)) < 2:
        return None
    pieces, view_starts, plain_starts, at, plain = [], [], [], 0, 0
    for p in REMOVED.finditer(text):
        pieces.append(text[at : p.start()])
        plain += p.start() - at
        at = p.end()
        view_starts.append(at)
        plain_starts.append(plain)
    pieces.append(text[at:])
    return "".join(pieces), view_starts, plain_starts


def _found(norm: str, text: str) -> list[tuple[int, int]]:
    """(offset, length) in `text` of each match of `norm`, verbatim or through line-number prefixes; of a line
    number, each place the text prints it as one."""
    if norm.startswith("line ") and norm[5:].isdigit():
        return [(m.start(), m.end() - m.start()) for m in _line_pattern(norm[5:]).finditer(text)]
    found = dict(matches(norm, text))
    plain = without_line_numbers(text)
    if plain is not None:
        stripped, view_starts, plain_starts = plain

        def in_view(i: int) -> int:
            k = bisect_right(plain_starts, i) - 1
            return i if k < 0 else view_starts[k] + i - plain_starts[k]

        for start, length in matches(norm, stripped):
            begin = in_view(start)
            found.setdefault(begin, in_view(start + length - 1) + 1 - begin)
    return sorted(found.items())


def locate_edits(items: pl.DataFrame, messages: pl.DataFrame) -> pl.DataFrame:
    """`locate`'s rows for edit items: used by their call, shown where an earlier message holds the text."""
    keys = items.select("trajectory_id", "norm")
    return locations(keys, items.select("trajectory_id", "norm", "used_at"), _occurrences(items, messages))


def _occurrences(items: pl.DataFrame, messages: pl.DataFrame) -> pl.DataFrame:
    """Every occurrence (OCCURRENCE_SCHEMA) of each edit item in the messages before the call that uses it."""
    if items.is_empty():
        return pl.DataFrame(schema=OCCURRENCE_SCHEMA)
    shown = (
        messages.filter(pl.col("role") != "assistant", pl.col("content").is_not_null())
        .join(items.select("trajectory_id", "norm", "used_at"), on="trajectory_id")
        .filter(pl.col("message_index") < pl.col("used_at"))
        .filter(
            pl.col("content")
            .str.to_lowercase()
            .str.contains(pl.col("norm").str.split("\n").list.first().str.strip_prefix("line "), literal=True)
        )
    )
    rows = [
        (tid, norm, index, role, start, length, len(text))
        for tid, norm, index, role, text in shown.select(
            "trajectory_id", "norm", "message_index", "role", "content"
        ).iter_rows()
        for start, length in _found(norm, text)
    ]
    return pl.DataFrame(rows, schema=OCCURRENCE_SCHEMA, orient="row")
