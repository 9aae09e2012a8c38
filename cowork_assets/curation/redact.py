"""Secrets in a chunk's messages: found in what the logs hold, replaced in what is curated (and so published).

Found in each message's content, reasoning and tool-call arguments (their decoded string values), before any cut,
so the budget can reserve what the placeholders add; replaced after the cuts, the trim and the terminal rendering,
which all render from the original text. A secret found anywhere in a trajectory is replaced wherever it occurs in
it. What was replaced is recorded (`redactions`: the place, the kind and a hash, never the text), and so is each
evidence item a secret was part of: a value a grader checks that the dataset can no longer show."""

from __future__ import annotations

import orjson
import polars as pl

from cowork_assets.curation.secrets import Detector, digest, growth, readable, redact

FOUND = {"trajectory_id": pl.String, "secret": pl.String, "kind": pl.String}
KEY = ["trajectory_id", "message_index"]


def texts(messages: pl.DataFrame) -> pl.DataFrame:
    """trajectory_id, text: every text of the messages a secret may hide in."""
    arguments = (
        messages.select("trajectory_id", args=pl.col("tool_calls").list.eval(pl.element().struct.field("arguments")))
        .explode("args")
        .drop_nulls("args")
        .select("trajectory_id", text="args")
    )
    return pl.concat(
        [
            messages.select("trajectory_id", text="content"),
            messages.select("trajectory_id", text="reasoning_content"),
            arguments,
        ]
    ).drop_nulls("text")


def find(messages: pl.DataFrame, detector: Detector) -> pl.DataFrame:
    """trajectory_id, secret, kind: the secrets of each trajectory (the screen passes a few texts; those are read)."""
    every = texts(messages)
    rows = []
    for trajectory_id, text in every.filter(detector.candidates(every["text"])).iter_rows():
        rows += [(trajectory_id, s, k) for s, k in detector.find_written(text).items()]
    return pl.DataFrame(rows, schema=FOUND, orient="row").unique(["trajectory_id", "secret"], maintain_order=True)


def by_trajectory(found: pl.DataFrame) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for trajectory_id, secret, kind in found.iter_rows():
        out.setdefault(trajectory_id, {})[secret] = kind
    return out


def reserve(messages: pl.DataFrame, found: pl.DataFrame) -> pl.DataFrame:
    """trajectory_id, reserve: characters the placeholders may add to a trajectory (each occurrence at most)."""
    secrets = by_trajectory(found)
    rows = []
    for trajectory_id, group in messages.filter(pl.col("trajectory_id").is_in(list(secrets))).group_by(
        "trajectory_id", maintain_order=True
    ):
        mine = secrets[trajectory_id[0]]
        whole = "\n".join(texts(group)["text"].to_list())
        rows.append((trajectory_id[0], sum(whole.count(s) for s in mine) * max(growth(mine), 0)))
    return pl.DataFrame(rows, schema={"trajectory_id": pl.String, "reserve": pl.Int64}, orient="row")


def _arguments(arguments: str, secrets: dict[str, str]) -> str:
    if not any(s in readable(arguments) for s in secrets):
        return arguments
    try:
        return orjson.dumps(_replaced(orjson.loads(arguments), secrets)).decode()
    except orjson.JSONDecodeError:
        return redact(arguments, secrets)


def _replaced(value, secrets: dict[str, str]):
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {redact(k, secrets): _replaced(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, secrets) for v in value]
    return value


def apply(curated: pl.DataFrame, found: pl.DataFrame, batch: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the curated messages with their trajectories' secrets replaced, their `chars` recounted; one redactions row
    per message, field and kind replaced)."""
    secrets = by_trajectory(found)
    hit = curated.filter(pl.col("trajectory_id").is_in(list(secrets)))
    rows, records = [], []
    for row in hit.select(*KEY, "content", "reasoning_content", "tool_calls", "chars").iter_rows(named=True):
        mine = secrets[row["trajectory_id"]]
        calls = [{**c, "arguments": _arguments(c["arguments"], mine)} for c in row["tool_calls"] or []]
        new = {
            "content": redact(row["content"], mine),
            "reasoning_content": redact(row["reasoning_content"], mine),
            "tool_calls": calls,
        }
        old_args = "".join(c["arguments"] for c in row["tool_calls"] or [])
        for field, before, after in (
            ("content", row["content"] or "", new["content"] or ""),
            ("reasoning_content", row["reasoning_content"] or "", new["reasoning_content"] or ""),
            ("arguments", old_args, "".join(c["arguments"] for c in calls)),
        ):
            for secret, kind in mine.items():
                if before != after and (
                    n := readable(before).count(secret) if field == "arguments" else before.count(secret)
                ):
                    records.append((batch, row["trajectory_id"], row["message_index"], field, kind, digest(secret), n))
        grown = sum(len(new[f] or "") - len(row[f] or "") for f in ("content", "reasoning_content"))
        grown += len("".join(c["arguments"] for c in calls)) - len(old_args)
        rows.append({**{k: row[k] for k in KEY}, **new, "chars": row["chars"] + grown})
    if rows:
        replaced = pl.DataFrame(
            rows, schema={**hit.select(*KEY, "content", "reasoning_content", "tool_calls", "chars").schema}
        )
        curated = curated.update(replaced, on=KEY)
    schema = {
        "batch": pl.String,
        "trajectory_id": pl.String,
        "message_index": pl.Int32,
        "field": pl.String,
        "kind": pl.String,
        "secret_hash": pl.String,
        "occurrences": pl.Int32,
    }
    return curated, pl.DataFrame(records, schema=schema, orient="row")


def evidence(evidence: pl.DataFrame, found: pl.DataFrame) -> pl.DataFrame:
    """trajectory_id, norm: evidence items a secret is part of (or that are part of one)."""
    secrets = by_trajectory(found)
    rows = [
        (t, norm)
        for t, value, norm in evidence.filter(pl.col("trajectory_id").is_in(list(secrets)))
        .select("trajectory_id", "value", "norm")
        .iter_rows()
        if any(s in (value or "") or (len(value or "") >= 8 and value in s) for s in secrets[t])
    ]
    return pl.DataFrame(rows, schema={"trajectory_id": pl.String, "norm": pl.String}, orient="row").unique()


def rows(frame: pl.DataFrame, texts: list[str], json_texts: list[str], detector: Detector) -> pl.DataFrame:
    """`frame` with the secrets found in each row's `texts` and `json_texts` columns (JSON text: their decoded
    values) replaced in that row. The rows are screened together; only those that may hold one are read."""
    columns = [*texts, *json_texts]
    if frame.is_empty() or not columns:
        return frame
    joined = pl.concat_str([pl.col(c).fill_null("") for c in columns], separator="\n")
    hit = frame.with_row_index("_row").filter(detector.candidates(frame.select(joined).to_series()))
    if hit.is_empty():
        return frame
    changed = []
    for row in hit.select("_row", *columns).iter_rows(named=True):
        found = detector.find_written(
            "\n".join([*(row[c] or "" for c in texts), *(readable(row[c] or "") for c in json_texts)])
        )
        if found:
            changed.append(
                {
                    "_row": row["_row"],
                    **{c: redact(row[c], found) for c in texts},
                    **{c: _json(row[c], found) for c in json_texts},
                }
            )
    if not changed:
        return frame
    update = pl.DataFrame(changed, schema={"_row": pl.UInt32, **{c: pl.String for c in columns}})
    return frame.with_row_index("_row").update(update, on="_row").drop("_row")


def _json(text: str | None, secrets: dict[str, str]) -> str | None:
    return _arguments(text, secrets) if text else text


def checked_secrets(packages: pl.DataFrame, detector: Detector) -> pl.DataFrame:
    """task_id, kinds: tasks whose grading checks hold a secret (found in the task's request, state or checks): the
    published task shows a placeholder where the grader compares the value, so it cannot be graded."""
    texts = pl.concat_str([pl.col(c).fill_null("") for c in ("request", "initial_state", "checks")], separator="\n")
    hit = packages.filter(detector.candidates(packages.select(texts).to_series()))
    out = []
    for task_id, request, state, checks in hit.select("task_id", "request", "initial_state", "checks").iter_rows():
        found = detector.find_written("\n".join([request or "", readable(state or ""), readable(checks or "")]))
        kinds = sorted({k for s, k in found.items() if s in readable(checks or "")})
        if kinds:
            out.append((task_id, ", ".join(kinds)))
    return pl.DataFrame(out, schema={"task_id": pl.String, "kinds": pl.String}, orient="row").unique("task_id")
