"""Render every published SFT row under the official chat templates of the open model families, with transformers,
as TRL does: the Parquet files loaded with `datasets.load_dataset("parquet")`, each row's `messages` and `tools`
given to `apply_chat_template` as they come. Run in the trainer environment (.venv-train) by
tests/datasets/test_official_templates.py, which asserts on the facts this writes as JSON.

    python official_templates.py OUT.json DATA_ROOT[=FAMILY] [DATA_ROOT[=FAMILY] ...]

Per data root: the rows, each family's failures (sample id and error), the samples whose rendered prompt under Qwen3
instructs tool calls though the row has none, and each row's `tokens` beside its count in Qwen3's tokenizer rendered
by FAMILY's template (default qwen3: the data root's `tokenizer` setting names that folder).
"""

import glob
import json
import sys
from pathlib import Path

from datasets import load_dataset
from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.official_templates import FAMILIES, QWEN3, template  # noqa: E402


def facts(root: str, tokenizer, counted_as: str) -> dict:
    files = sorted(glob.glob(f"{root}/published/sft_dataset/current/*.parquet"))
    rows = load_dataset("parquet", data_files=files, split="train")
    failures = {family: [] for family in FAMILIES}
    instructed, tokens = [], {}
    for r in rows:
        tools = json.loads(r["tools"]) if isinstance(r["tools"], str) else r["tools"]
        for family in FAMILIES:
            try:
                text = tokenizer.apply_chat_template(
                    r["messages"], tools=tools or None, tokenize=False, chat_template=template(family)
                )
            except Exception as error:  # a template raises what it likes
                failures[family].append([r["sample_id"], f"{type(error).__name__}: {error}"])
                continue
            calls = any(m["tool_calls"] for m in r["messages"])
            if family == "qwen3" and not calls and "<tool_call>" in text:
                instructed.append(r["sample_id"])
        ids = tokenizer.apply_chat_template(
            r["messages"], tools=tools or None, tokenize=True, return_dict=True, chat_template=template(counted_as)
        )
        tokens[r["sample_id"]] = [len(ids["input_ids"]), r["tokens"]]
    return {"rows": len(rows), "failures": failures, "instructed": instructed, "tokens": tokens}


def main() -> None:
    out, roots = Path(sys.argv[1]), sys.argv[2:]
    tokenizer = AutoTokenizer.from_pretrained(str(QWEN3))
    named = [(root.partition("=")[0], root.partition("=")[2] or "qwen3") for root in roots]
    out.write_text(json.dumps({root: facts(root, tokenizer, family) for root, family in named}))


if __name__ == "__main__":
    main()
