"""Run the published RL tasks through verl's own code; run in the trainer environment (.venv-train) by
tests/datasets/test_trainers.py, which asserts on the facts this prints as JSON.

    python verl_rl.py DATA_ROOT WORK_DIR

* verl's `RLHFDataset` reads `rl_tasks` (train and validation) with the generated tool config.
* verl's `ToolAgentLoop` runs each simulated task with a scripted model in place of the inference server: it
  answers with the assistant turns of the task's published SFT sample (its tool calls in Hermes
  `<tool_call>` blocks), so every tool call goes through verl's own parsing, `tools_kwargs`, `tool_selection`
  and create / execute / release of the generated tools, answered by the workspace simulation.
* The reward function is loaded the three ways verl loads one (a file path, `pkg://`, and by module, through
  verl's `get_custom_reward_fn`) and called as verl's reward loop calls it, on the decoded response.
* verl's multi-turn SFT dataset reads the published SFT files through `CoworkMultiTurnSFTDataset`.
"""

import asyncio
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
from local_tokenizer import corpus, tokenizer
from omegaconf import OmegaConf
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
from verl.tools.tool_registry import initialize_tools_from_config
from verl.trainer.ppo.reward import get_custom_reward_fn
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.utils.import_utils import load_extern_object
from verl.workers.rollout.replica import TokenOutput

import cowork_assets.rewards
from cowork_assets.rewards import score


class ScriptedServer:
    """The inference server's `generate`, answering with a fixed list of assistant turns, one per call."""

    def __init__(self, tok, turns: list[str]):
        self.tok, self.turns = tok, list(turns)

    async def generate(self, request_id, prompt_ids, sampling_params, **kwargs) -> TokenOutput:
        text = self.turns.pop(0) if self.turns else "Done.<|im_end|>"
        return TokenOutput(token_ids=self.tok.encode(text, add_special_tokens=False), extra_fields={})


def hermes(message: dict) -> str:
    """An assistant turn as a Qwen / Hermes model writes it."""
    parts = [message["content"]] if message["content"] else []
    for call in message["tool_calls"] or []:
        f = call["function"]
        parts.append(f'<tool_call>\n{{"name": "{f["name"]}", "arguments": {f["arguments"]}}}\n</tool_call>')
    return "\n".join(parts) + "<|im_end|>"


def sft_samples(root: Path) -> dict[str, dict]:
    """task_id -> its first published SFT sample with one user turn (what a rollout without a simulated user
    can replay): its messages (pyarrow: arguments as stored) and the raw observations its calls got."""
    out = {}
    for f in sorted((root / "published" / "sft_dataset" / "current").glob("*.parquet")):
        for r in pq.read_table(f, columns=["task_id", "trajectory_id", "batch", "messages"]).to_pylist():
            if [m["role"] for m in r["messages"]].count("user") == 1:
                out.setdefault(r["task_id"], r)
    columns = ["trajectory_id", "message_index", "role", "content"]
    raw = [
        m
        for f in (root / "tables" / "messages").glob("*/data.parquet")
        for m in pq.read_table(f, columns=columns).to_pylist()
    ]
    observations: dict[str, list[str]] = {}
    for m in sorted(raw, key=lambda m: (m["trajectory_id"], m["message_index"])):
        if m["role"] == "tool":
            observations.setdefault(m["trajectory_id"], []).append(m["content"])
    for sample in out.values():
        sample["observations"] = observations.get(sample["trajectory_id"], [])
    return out


def loop_config(tool_config: str) -> OmegaConf:
    multi_turn = {
        "max_user_turns": 32,
        "max_assistant_turns": 32,
        "max_parallel_calls": 8,
        "max_tool_response_length": 1_000_000,
        "tool_response_truncate_side": "middle",
        "format": "hermes",
        "tool_config_path": tool_config,
    }
    rollout = {"prompt_length": 16384, "response_length": 65536, "full_determinism": True, "multi_turn": multi_turn}
    return OmegaConf.create({"actor_rollout_ref": {"rollout": rollout}})


async def rollouts(root: Path, tok, rows, tool_config: str) -> list[dict]:
    tools = initialize_tools_from_config(tool_config)
    data_config = OmegaConf.create({})
    samples = sft_samples(root)
    out = []
    for row in rows:
        sample = samples.get(row["extra_info"]["task_id"])
        if not row["extra_info"]["tools_simulated"] or sample is None:
            continue
        messages = sample["messages"]
        turns = [hermes(m) for m in messages if m["role"] == "assistant"]
        loop = ToolAgentLoop(
            trainer_config=DictConfigWrap(loop_config(tool_config)),
            server_manager=ScriptedServer(tok, turns),
            tokenizer=tok,
            processor=None,
            dataset_cls=RLHFDataset,
            data_config=DictConfigWrap(data_config),
            tools=ToolListWrap(tools),
        )
        result = await loop.run(sampling_params={}, **row)
        response = tok.decode(result.response_ids)
        calls = [c["function"]["name"] for m in messages for c in (m["tool_calls"] or [])]
        out.append(
            {
                "task_id": row["extra_info"]["task_id"],
                "response": response,
                "state": result.extra_fields.get("cowork_workspace", {}),
                "calls": calls,
                "recorded_observations": sample["observations"],
                "checks": row["reward_model"]["ground_truth"],
                "teacher_reward": score(messages, row["reward_model"]["ground_truth"]).reward,
                "data_source": row["data_source"],
                "extra_info": row["extra_info"],
            }
        )
    return out


def rewards(runs: list[dict]) -> dict:
    """compute_score loaded three ways, called as verl's reward loop calls it."""
    path = cowork_assets.rewards.__file__
    loaded = {
        "file": load_extern_object(path, "compute_score"),
        "pkg": load_extern_object("pkg://cowork_assets.rewards", "compute_score"),
        "config": get_custom_reward_fn(
            OmegaConf.create({"reward": {"custom_reward_function": {"path": path, "name": "compute_score"}}})
        ),
    }
    return {
        how: [
            fn(
                data_source=r["data_source"],
                solution_str=r["response"],
                ground_truth=r["checks"],
                extra_info=r["extra_info"],
            )
            for r in runs
        ]
        for how, fn in loaded.items()
    }


def sft_dataset(root: Path, tok) -> dict:
    from cowork_assets.trainers.verl import CoworkMultiTurnSFTDataset

    files = [str(f) for f in sorted((root / "published" / "sft_dataset" / "current").glob("*.parquet"))]
    config = OmegaConf.create({"max_length": 65536, "truncation": "error", "messages_key": "messages"})
    data = CoworkMultiTurnSFTDataset(files, tok, config)
    first = data[0]
    return {
        "rows": len(data),
        "tools_are_lists": all(isinstance(t, list) for t in data.tools),
        "first_tokens": int(first["input_ids"].shape[0]),
        "first_loss_tokens": int(first["loss_mask"].sum()),
    }


def main(root: Path, work: Path) -> dict:
    tok = tokenizer(corpus(root), "qwen2.5.jinja")
    current = root / "published" / "rl_tasks" / "current"
    tool_config = str(current / "verl_tools.yaml")
    config = OmegaConf.create(
        {"prompt_key": "prompt", "max_prompt_length": 16384, "filter_overlong_prompts": False}
        | {"tool_config_path": tool_config, "return_raw_chat": True}
    )
    dataset = RLHFDataset([str(current / "train.parquet"), str(current / "validation.parquet")], tok, config)
    rows = [dataset[i] for i in range(len(dataset))]
    runs = asyncio.run(rollouts(root, tok, rows, tool_config))
    return {
        "rows": [
            {
                "task_id": r["extra_info"]["task_id"],
                "agent_name": r["agent_name"],
                "tools_kwargs": r["tools_kwargs"],
                "tool_selection": r["extra_info"]["tool_selection"],
                "tools_simulated": r["extra_info"]["tools_simulated"],
                "ground_truth": r["reward_model"]["ground_truth"],
            }
            for r in rows
        ],
        "tool_schemas": dataset.tool_schemas,
        "runs": runs,
        "rewards": rewards(runs),
        "sft": sft_dataset(root, tok),
    }


if __name__ == "__main__":
    facts = main(Path(sys.argv[1]), Path(sys.argv[2]))
    Path(sys.argv[2], "verl_facts.json").write_text(json.dumps(facts, default=str))
