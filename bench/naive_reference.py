"""The naive reference `make bench` compares the pipeline with: a plain single-process script doing a part
of the job the way a researcher would write it (standard json, Python loops, tiktoken's `encode` per
message), deliberately untuned. Kept as written; do not optimise it.

    python bench/naive_reference.py RAW_ROOT OUT.parquet

It reads every `*.jsonl` / `*.jsonl.gz` file of every batch folder, keeps passing teacher runs, cuts tool
observations to their first 1,000 characters, drops samples over 40,000 characters, drops exact duplicates
by a hash of the messages, counts o200k tokens of every kept message and writes one Parquet file.
"""

import gzip
import hashlib
import json
import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import cowork_assets.tokens

# The rank file ships with cowork-curate (there is no internet here); tiktoken finds it in this folder.
os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(Path(cowork_assets.tokens.__file__).parent / "tiktoken_cache"))
import tiktoken  # noqa: E402

MAX_OBSERVATION = 1000
MAX_SAMPLE = 40000


def read_lines(path):
    opener = gzip.open if path.name.endswith(".gz") else open
    lines = []
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            for line in f:
                lines.append(line)
    except (EOFError, OSError):  # a damaged gzip file: keep what was read
        pass
    return lines


def process(line, batch, encoding, seen):
    run = json.loads(line)
    if run.get("teacher", {}).get("role") != "teacher" or not run.get("grade", {}).get("passed"):
        return None
    messages = []
    for message in run["messages"]:
        message = dict(message)
        content = message.get("content")
        if message.get("role") == "tool" and isinstance(content, str) and len(content) > MAX_OBSERVATION:
            message["content"] = content[:MAX_OBSERVATION]
        messages.append(message)
    size = sum(len(json.dumps(m)) for m in messages)
    if size > MAX_SAMPLE:
        return None
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    if digest in seen:
        return None
    seen.add(digest)
    tokens = 0
    for m in messages:
        text = m.get("content") or ""
        for call in m.get("tool_calls") or []:
            text += json.dumps(call)
        tokens += len(encoding.encode(text, disallowed_special=()))
    return {
        "trajectory_id": str(run.get("trajectory_id")),
        "batch": batch,
        "messages": json.dumps(messages),
        "chars": size,
        "tokens": tokens,
    }


def main(raw_root, out):
    encoding = tiktoken.get_encoding("o200k_base")
    seen = set()
    rows = []
    for batch in sorted(Path(raw_root).iterdir()):
        if not batch.is_dir():
            continue
        for path in sorted(batch.iterdir()):
            if not (path.name.endswith(".jsonl") or path.name.endswith(".jsonl.gz")):
                continue
            for line in read_lines(path):
                try:
                    row = process(line, batch.name, encoding, seen)
                except (ValueError, TypeError, AttributeError, KeyError):  # a malformed record: skip it
                    continue
                if row is not None:
                    rows.append(row)
    pq.write_table(pa.Table.from_pylist(rows), out)
    print(f"{len(rows)} samples written to {out}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
