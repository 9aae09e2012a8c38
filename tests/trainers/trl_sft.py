"""Train with TRL's SFTTrainer on the published SFT files, loaded exactly as docs/training.md says; run in the
trainer environment (.venv-train) by tests/datasets/test_trainers.py, which asserts on the facts this prints as JSON.

    python trl_sft.py DATA_ROOT WORK_DIR    (WORK_DIR/sft.jsonl: the `jsonl` export of every sample)

Nothing is downloaded: the tokenizer is trained here on the samples' own text, the model is a tiny Qwen2 made
from a config. For each shipped training template, every published sample is tokenized by the trainer's own
dataset preparation (no length limit), its input decoded and read back: the tool schemas and call arguments
that the template rendered, which turns follow which, and the text the assistant-only loss mask covers. Then
a few optimizer steps run on the shortest samples, with and without assistant-only loss.
"""

import json
import re
import sys
from pathlib import Path

import pyarrow.parquet as pq
from datasets import load_dataset
from local_tokenizer import corpus, tokenizer
from transformers import Qwen2Config, Qwen2ForCausalLM
from trl import SFTConfig, SFTTrainer

from cowork_assets.trainers import for_chat_template
from cowork_assets.trainers.tokenizer import ChatTokenizer

REFERENCE = Path(__file__).resolve().parents[1] / "templates"  # the same templates without generation markers

# What each template's assistant turns look like: header, then the part the model writes (the loss span).
TURNS = {
    "qwen2.5.jinja": re.compile(r"<\|im_start\|>assistant\n(.*?<\|im_end\|>)", re.S),
    "llama3.1.jinja": re.compile(r"<\|start_header_id\|>assistant<\|end_header_id\|>\n\n(.*?<\|e[om][mt]_id\|>)", re.S),
}


def published(root: Path) -> dict[str, dict]:
    """sample_id -> its tools and call arguments as stored, read with pyarrow (not through `datasets`)."""
    rows = {}
    for f in (root / "published" / "sft_dataset" / "current").glob("*.parquet"):
        for r in pq.read_table(f, columns=["sample_id", "messages", "tools"]).to_pylist():
            calls = [c["function"] for m in r["messages"] for c in (m["tool_calls"] or [])]
            rows[r["sample_id"]] = {
                "tools": json.loads(r["tools"]),
                "calls": [{"name": c["name"], "arguments": json.loads(c["arguments"])} for c in calls],
                "roles": [m["role"] for m in r["messages"]],
                "reasoning": [m["reasoning_content"] for m in r["messages"] if m.get("reasoning_content")],
            }
    return rows


def samples(root: Path) -> list[tuple[str, list[dict], list[dict]]]:
    """(sample_id, messages, tools) of every published sample, as `for_chat_template` gives them to a template."""
    out = []
    for f in (root / "published" / "sft_dataset" / "current").glob("*.parquet"):
        for r in pq.read_table(f, columns=["sample_id", "messages", "tools"]).to_pylist():
            out.append((r["sample_id"], *for_chat_template(r["messages"], r["tools"])))
    return out


def rendered_facts(text: str, template: str) -> dict:
    """What the template rendered, read back from the decoded input."""
    if template.startswith("qwen"):
        listed = re.search(r"<tools>\n(.*?)\n</tools>", text, re.S)
        tools = [json.loads(line) for line in listed.group(1).splitlines()] if listed else []
        conversation = text.split("<|im_end|>", 1)[1]  # after the system turn (its format example has a call)
        calls = [json.loads(b) for b in re.findall(r"<tool_call>\n(.*?)\n</tool_call>", conversation, re.S)]
        turns = conversation.split("<|im_start|>")[1:]
        order = ["tool" if t.startswith("user\n<tool_response>") else t.split("\n", 1)[0] for t in turns]
        responses_after_calls = all(
            order[i - 1] == "assistant" and "<tool_call>" in turns[i - 1] for i, r in enumerate(order) if r == "tool"
        )
        reasoning = re.findall(r"<think>\n(.*?)\n</think>\n\n", conversation, re.S)
    else:
        head = text.split("<|eot_id|>", 1)[0]  # the tool list follows its preamble; a row with none has neither
        system = head.split("its value}.\n\n", 1)[1] if "its value}.\n\n" in head else ""
        tools, decoder, at = [], json.JSONDecoder(), system.find("{")
        while at >= 0:
            tool, end = decoder.raw_decode(system, at)
            tools.append(tool)
            at = system.find("{", end)
        calls = [
            {"name": c["name"], "arguments": c["parameters"]}
            for c in (decoder.raw_decode(line)[0] for line in text.splitlines() if line.startswith('{"name"'))
        ]
        order = re.findall(r"<\|start_header_id\|>(\w+)<\|end_header_id\|>", text)[1:]
        responses_after_calls = all(
            order[i - 1] in ("assistant", "ipython") for i, r in enumerate(order) if r == "ipython"
        )
        reasoning = []  # the Llama-style template has no place for it
    return {
        "tools": tools,
        "calls": calls,
        "last_turn": order[-1] if order else None,
        "reasoning": reasoning,
        "responses_after_calls": responses_after_calls,
    }


def mask_facts(tok, input_ids: list[int], mask: list[int], text: str, template: str) -> dict:
    """The spans the loss trains on (labels not -100), decoded, against the assistant turns of the decoded text."""
    spans, current = [], []
    for token, m in zip(input_ids, mask):
        if m:
            current.append(token)
        elif current:
            spans.append(current)
            current = []
    if current:
        spans.append(current)
    return {
        "masked": [tok.decode(s) for s in spans],
        "assistant_turns": TURNS[template].findall(text),
    }


def config(work: Path, assistant_only: bool, max_length: int | None, steps: int) -> SFTConfig:
    return SFTConfig(
        output_dir=str(work / ("trl-assistant" if assistant_only else "trl-all")),
        max_length=max_length,
        assistant_only_loss=assistant_only,
        max_steps=steps,
        per_device_train_batch_size=2,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        dataloader_num_workers=0,
        seed=0,
    )


def model(tok) -> Qwen2ForCausalLM:
    return Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=len(tok),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=32768,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
        )
    )


def main(root: Path, work: Path) -> dict:
    # docs/training.md's load lines, verbatim.
    current = root / "published" / "sft_dataset" / "current"
    data = load_dataset(
        "parquet",
        data_files={"train": str(current / "train.parquet"), "validation": str(current / "validation.parquet")},
    )
    rows = published(root)
    texts = corpus(root)
    out = {"rows": {s: len(data[s]) for s in data}, "templates": {}, "training": {}}
    for template in TURNS:
        tok = tokenizer(texts, template)
        # The trainer's own dataset preparation (no length limit, so nothing is cut off).
        trainer = SFTTrainer(
            model=model(tok),
            args=config(work, True, None, 1),
            train_dataset=data["train"],
            processing_class=tok,
        )
        facts = []
        for source, example in zip(data["train"], trainer.train_dataset):
            text = tok.decode(example["input_ids"])
            facts.append(
                {
                    "sample_id": source["sample_id"],
                    "published": rows[source["sample_id"]],
                    **rendered_facts(text, template),
                    **mask_facts(
                        tok, example["input_ids"], [int(t != -100) for t in example["labels"]], text, template
                    ),
                }
            )
        out["templates"][template] = facts
        reference = (REFERENCE / template).read_text()
        out.setdefault("differs_from_reference", {})[template] = [
            r["sample_id"]
            for r in data["train"]
            if tok.apply_chat_template(r["messages"], tools=r["tools"], tokenize=False)
            != tok.apply_chat_template(r["messages"], tools=r["tools"], tokenize=False, chat_template=reference)
        ]
        # The `tokenizer` setting's count of each sample is the length transformers' own rendering gives.
        folder = work / f"tokenizer-{template}"
        tok.save_pretrained(str(folder))
        counter = ChatTokenizer(str(folder))
        out.setdefault("token_counts_differ", {})[template] = [
            sample_id
            for sample_id, chat, tools in samples(root)
            if counter.count_sample(chat, tools)
            != len(tok.apply_chat_template(chat, tools=tools, tokenize=True, return_dict=True)["input_ids"])
        ]
        # The JSON Lines export, read as JSON, renders each sample exactly as the Parquet file does.
        exported = load_dataset("json", data_files=str(work / "sft.jsonl"))["train"]
        by_id = {r["sample_id"]: r for r in data["train"]}
        out.setdefault("jsonl_differs", {})[template] = [
            r["sample_id"]
            for r in exported
            if r["sample_id"] in by_id
            and tok.apply_chat_template(r["messages"], tools=r["tools"], tokenize=False)
            != tok.apply_chat_template(
                by_id[r["sample_id"]]["messages"], tools=by_id[r["sample_id"]]["tools"], tokenize=False
            )
        ]
    # A few optimizer steps on the shortest samples, with and without assistant-only loss.
    tok = tokenizer(texts, "qwen2.5.jinja")
    short = data["train"].select(sorted(range(len(data["train"])), key=lambda i: data["train"][i]["chars"])[:8])
    for assistant_only in (False, True):
        trainer = SFTTrainer(
            model=model(tok), args=config(work, assistant_only, 4096, 3), train_dataset=short, processing_class=tok
        )
        result = trainer.train()
        losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
        out["training"]["assistant_only" if assistant_only else "all_tokens"] = {
            "steps": result.global_step,
            "losses": losses,
        }
    return out


if __name__ == "__main__":
    facts = main(Path(sys.argv[1]), Path(sys.argv[2]))
    Path(sys.argv[2], "trl_facts.json").write_text(json.dumps(facts))
