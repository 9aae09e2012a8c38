"""verl's side of the published datasets; import it only where verl is installed.

* `WorkspaceTool`: the tool class of the generated tool config (`verl_tools.yaml` beside `rl_tasks`). verl's
  `ToolAgentLoop` creates, executes and releases a tool instance per call, passing the task row's
  `tools_kwargs[tool].create_kwargs` (the tool's service slice of the initial state) to `create`. The
  rollout's workspace lives in `agent_data.extra_fields`, so a call sees what earlier calls of the same
  rollout wrote, and each rollout starts from its own copy of the state.
* `CoworkMultiTurnSFTDataset`: verl's multi-turn SFT dataset reading the published SFT files (it reads
  Parquet with pandas, which gives the JSON fields as strings): `tools` and tool-call `arguments` as objects.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import ToolResponse
from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

from cowork_assets.synthetic.workspace import Workspace

WORKSPACE = "cowork_workspace"  # the rollout's state, in agent_data.extra_fields


class WorkspaceTool(BaseTool):
    def __init__(self, config: dict, tool_schema):
        super().__init__(config, tool_schema)
        self._slices: dict[str, dict] = {}

    async def create(self, instance_id: str | None = None, create_kwargs: dict | None = None, **kwargs):
        instance_id, response = await super().create(instance_id)
        self._slices[instance_id] = create_kwargs or {}
        return instance_id, response

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        agent_data = kwargs.get("agent_data")
        state = agent_data.extra_fields.setdefault(WORKSPACE, {}) if agent_data is not None else {}
        for service, records in self._slices.get(instance_id, {}).items():
            if service not in state:  # a service's slice enters the rollout's state once, copied
                state[service] = copy.deepcopy(records)
        return ToolResponse(text=Workspace(state).call(self.name, parameters)), 0.0, {}

    async def release(self, instance_id: str, **kwargs) -> None:
        self._slices.pop(instance_id, None)


def _decoded(value):
    return json.loads(value) if isinstance(value, str) else value


class CoworkMultiTurnSFTDataset(MultiTurnSFTDataset):
    def _read_files_and_process(self):
        super()._read_files_and_process()
        if self.tools is not None:
            self.tools = [_decoded(t) for t in self.tools]

    def _build_messages(self, example: dict) -> list:
        messages = super()._build_messages(example)
        for m in messages:
            for call in m.get("tool_calls") or []:
                call["function"]["arguments"] = _decoded(call["function"]["arguments"])
        return messages
