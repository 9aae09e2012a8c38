"""Train with TRL's DPOTrainer and KTOTrainer on the published preference pairs, loaded as docs/training.md says; run
in the trainer environment (.venv-train) by tests/datasets/test_preference.py, which asserts on the facts this writes.

    python trl_dpo.py DATA_ROOT WORK_DIR    (WORK_DIR/kto.jsonl: the `kto` export of the pairs)

Nothing is downloaded: the tokenizer is trained here on the pairs' own text, the model is a tiny Qwen2 made from a
config. TRL prepares every pair (its prompt, chosen and rejected turns through the chat template, tools included),
then two DPO steps and one KTO step run. Each pair is also rendered under Qwen3's official chat template.
"""

import copy
import json
import sys
from pathlib import Path

from datasets import load_dataset
from local_tokenizer import tokenizer
from transformers import AutoTokenizer
from trl import DPOConfig, DPOTrainer, KTOConfig, KTOTrainer

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.official_templates import QWEN3  # noqa: E402
from tests.trainers.trl_sft import model  # noqa: E402

COMMON = dict(per_device_train_batch_size=2, learning_rate=1e-3, logging_steps=1, save_strategy="no", report_to="none")
COMMON |= dict(use_cpu=True, bf16=False, dataloader_num_workers=0, seed=0)  # as trl_sft.py's `config`


def main(root: Path, work: Path) -> dict:
    current = root / "published" / "preference_pairs" / "current"
    data = load_dataset(
        "parquet",
        data_files={"train": str(current / "train.parquet"), "validation": str(current / "validation.parquet")},
    )
    train = data["train"]
    texts = [json.dumps(r[side]) for r in train for side in ("prompt", "chosen", "rejected")]
    tok = tokenizer(texts, "qwen2.5.jinja")
    out = {"rows": {s: len(data[s]) for s in data}}
    # TRL's own preparation of every pair: prompt, chosen and rejected token ids, the tools in the prompt.
    policy = model(tok)
    prepare = DPOTrainer(  # every pair, no length limit
        model=policy,
        ref_model=copy.deepcopy(policy),
        args=DPOConfig(output_dir=str(work / "dpo"), max_length=None, max_steps=1, **COMMON),
        train_dataset=train,
        processing_class=tok,
    )
    prepared = prepare.train_dataset
    out["prepared"] = len(prepared)
    out["empty_sides"] = [
        r["pair_id"] for r, p in zip(train, prepared) if not (p["chosen_ids"] and p["rejected_ids"] and p["prompt_ids"])
    ]
    short = train.select(sorted(range(len(train)), key=lambda i: train[i]["chars"])[:4])
    policy = model(tok)
    trainer = DPOTrainer(
        model=policy,
        ref_model=copy.deepcopy(policy),
        args=DPOConfig(output_dir=str(work / "dpo"), max_steps=2, **COMMON),
        train_dataset=short,
        processing_class=tok,
    )
    trainer.train()
    out["dpo_losses"] = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    # The KTO export, unpaired: one step.
    kto = load_dataset("json", data_files=str(work / "kto.jsonl"), split="train")
    kto = kto.select(sorted(range(len(kto)), key=lambda i: len(json.dumps(kto[i]["completion"])))[:4])
    policy = model(tok)
    kto_trainer = KTOTrainer(
        model=policy,
        ref_model=copy.deepcopy(policy),
        args=KTOConfig(output_dir=str(work / "kto"), max_steps=1, **COMMON),
        train_dataset=kto,
        processing_class=tok,
    )
    kto_trainer.train()
    out["kto_labels"] = sorted(
        {bool(r["label"]) for r in load_dataset("json", data_files=str(work / "kto.jsonl"))["train"]}
    )
    out["kto_losses"] = [log["loss"] for log in kto_trainer.state.log_history if "loss" in log]
    # Both sides of every pair under Qwen3's official template, as TRL renders them.
    qwen3, failed = AutoTokenizer.from_pretrained(str(QWEN3)), []
    for r in train:
        tools = (json.loads(r["tools"]) if isinstance(r["tools"], str) else r["tools"]) or None
        for side in ("chosen", "rejected"):
            try:
                qwen3.apply_chat_template(r["prompt"] + r[side], tools=tools, tokenize=False)
            except Exception as error:  # a template raises what it likes
                failed.append([r["pair_id"], side, str(error)])
    out["qwen3_failures"] = failed
    return out


if __name__ == "__main__":
    facts = main(Path(sys.argv[1]), Path(sys.argv[2]))
    Path(sys.argv[2], "dpo_facts.json").write_text(json.dumps(facts))
