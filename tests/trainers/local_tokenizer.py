"""A tokenizer made here, for the trainer tests: byte-level BPE trained on the published samples' own text (nothing
is downloaded), with the special tokens of the shipped chat templates and one of them as its chat template."""

import json
from pathlib import Path

import pyarrow.parquet as pq
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from cowork_assets.trainers import chat_template

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|start_header_id|>"]
SPECIAL += ["<|end_header_id|>", "<|eot_id|>", "<|eom_id|>"]


def tokenizer(texts: list[str], template: str) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=4000,
            special_tokens=SPECIAL,
            show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    eos = "<|im_end|>" if template.startswith("qwen") else "<|eot_id|>"
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=eos, pad_token="<|endoftext|>")
    fast.chat_template = chat_template(template)
    return fast


def corpus(root: Path) -> list[str]:
    texts = []
    for f in (root / "published" / "sft_dataset" / "current").glob("*.parquet"):
        for messages, tools in pq.read_table(f, columns=["messages", "tools"]).to_pylist():
            texts.append(tools)
            texts += [json.dumps(m) for m in messages]
    return texts
