"""Exports of the published SFT and preference datasets to other trainers' formats.

* Chat templates (TRL, transformers): `trainers.for_chat_template` gives a sample's messages and tools with
  tool-call arguments as objects, ready for `tokenizer.apply_chat_template(messages, tools=tools)`.
* JSON Lines for trainers that read JSON (`datasets.load_dataset("json", ...)`): one published row per line,
  tool-call arguments and `tools` as objects, with the metadata and lineage columns.
* OpenAI fine-tuning JSONL: one `{"messages": [...], "tools": [...]}` object per line (arguments as the
  JSON strings that format requires).
* LLaMA-Factory ShareGPT: a JSON list of `{"conversations", "system", "tools"}` plus the
  `dataset_info.json` entry that registers it. Roles map to human / gpt / function_call /
  observation; an assistant turn that calls tools becomes one function_call (its text is dropped, as
  that format has no place for it), and consecutive tool results become one observation.
* Preference pairs as JSON Lines (`preference`): TRL's conversational preference rows, `prompt`, `chosen`,
  `rejected` and `tools` (arguments and tools as objects), with the lineage of both runs; `kto`: TRL's unpaired
  form, one `prompt`, `completion`, `label` row per run of a pair.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl

from cowork_assets.store.storage import atomic_path, exists, join, plain, write_text_atomic
from cowork_assets.store.versions import current_path
from cowork_assets.trainers import for_chat_template


def output_problem(path: Path, force: bool = False) -> str | None:
    """Why an export may not write the file at `path`, or None: exports write regular files only, and never
    rename over a link, a device or a FIFO; an existing file is replaced only when `force` says so."""
    if path.is_symlink():
        return f"{path} is a symbolic link: an export writes only regular files"
    if path.exists() and not path.is_file():
        return (
            f"{path} exists and is not a regular file (a folder, device or FIFO): an export writes only regular files"
        )
    if path.exists() and not force:
        return f"{path} exists: pass --force to replace it"
    if not path.parent.is_dir():
        return f"{path.parent} is not a folder"
    return None


def outputs(fmt: str, out: Path, name: str = "cowork_sft") -> list[Path]:
    """The files an export of format `fmt` to `out` writes."""
    return [out / f"{name}.json", out / "dataset_info.json"] if fmt == "llamafactory" else [out]


def _rows(data_root: str, split: str | None, dataset: str = "sft_dataset") -> pl.DataFrame:
    folder = current_path(data_root, dataset)
    files = [join(folder, f"{s}.parquet") for s in ([split] if split else ["train", "validation"])]
    return pl.concat([plain(pl.read_parquet(f)) for f in files if exists(f)])


def jsonl(data_root: str, out: Path, split: str | None = "train") -> int:
    rows = _rows(data_root, split)
    with atomic_path(out) as tmp, open(tmp, "wb") as fh:
        for row in rows.iter_rows(named=True):
            row["messages"], row["tools"] = for_chat_template(row["messages"], row["tools"])
            fh.write(orjson.dumps(row) + b"\n")
    return rows.height


def _openai_message(m: dict) -> dict:
    out = {"role": m["role"], "content": m["content"]}
    if m["tool_calls"]:
        out["tool_calls"] = m["tool_calls"]
    if m["role"] == "tool":
        out["tool_call_id"] = m["tool_call_id"]
    return out


def openai_jsonl(data_root: str, out: Path, split: str | None = "train") -> int:
    rows = _rows(data_root, split)
    with atomic_path(out) as tmp, open(tmp, "wb") as fh:
        for messages, tools in rows.select("messages", "tools").iter_rows():
            fh.write(
                orjson.dumps({"messages": [_openai_message(m) for m in messages], "tools": orjson.loads(tools)}) + b"\n"
            )
    return rows.height


def sharegpt(messages: list[dict]) -> tuple[str, list[dict]]:
    system, turns = "", []
    for m in messages:
        if m["role"] == "system":
            system = m["content"] or ""
        elif m["role"] == "user":
            turns.append({"from": "human", "value": m["content"] or ""})
        elif m["role"] == "assistant" and m["tool_calls"]:
            calls = [
                {"name": c["function"]["name"], "arguments": orjson.loads(c["function"]["arguments"])}
                for c in m["tool_calls"]
            ]
            turns.append(
                {"from": "function_call", "value": orjson.dumps(calls[0] if len(calls) == 1 else calls).decode()}
            )
        elif m["role"] == "assistant":  # reasoning as LLaMA-Factory's reasoning templates read it
            think = f"<think>\n{m['reasoning_content']}\n</think>\n\n" if m.get("reasoning_content") else ""
            turns.append({"from": "gpt", "value": think + (m["content"] or "")})
        elif turns and turns[-1]["from"] == "observation":
            turns[-1]["value"] += "\n" + (m["content"] or "")
        else:
            turns.append({"from": "observation", "value": m["content"] or ""})
    return system, turns


def llamafactory(data_root: str, out_dir: Path, split: str | None = "train", name: str = "cowork_sft") -> int:
    rows = _rows(data_root, split)
    records = []
    for messages, tools in rows.select("messages", "tools").iter_rows():
        system, turns = sharegpt(messages)
        records.append(
            {
                "conversations": turns,
                "system": system,
                "tools": orjson.dumps([t["function"] for t in orjson.loads(tools)]).decode(),
            }
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    info = {
        name: {
            "file_name": f"{name}.json",
            "formatting": "sharegpt",
            "columns": {"messages": "conversations", "system": "system", "tools": "tools"},
        }
    }
    for file_name, payload in ((f"{name}.json", records), ("dataset_info.json", info)):
        write_text_atomic(out_dir / file_name, orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
    return rows.height


def _objects(messages: list[dict]) -> list[dict]:
    return for_chat_template(messages, "[]")[0]


def preference(data_root: str, out: Path, split: str | None = "train") -> int:
    rows = _rows(data_root, split, "preference_pairs")
    with atomic_path(out) as tmp, open(tmp, "wb") as fh:
        for row in rows.iter_rows(named=True):
            for side in ("prompt", "chosen", "rejected"):
                row[side] = _objects(row[side])
            row["tools"] = orjson.loads(row["tools"])
            fh.write(orjson.dumps(row) + b"\n")
    return rows.height


def kto(data_root: str, out: Path, split: str | None = "train") -> int:
    from cowork_assets.datasets.preference import kto_rows

    rows = kto_rows(_rows(data_root, split, "preference_pairs"))
    with atomic_path(out) as tmp, open(tmp, "wb") as fh:
        for row in rows.iter_rows(named=True):
            row["prompt"], row["completion"] = _objects(row["prompt"]), _objects(row["completion"])
            fh.write(orjson.dumps(row) + b"\n")
    return rows.height
