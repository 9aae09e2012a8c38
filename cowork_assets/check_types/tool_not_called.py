"""`tool_not_called`: the run never calls `tool`; it holds from the first turn unless the tool is called."""

from __future__ import annotations

from cowork_assets.check_types._base import CheckType


class ToolNotCalled(CheckType):
    name = "tool_not_called"

    def problems(self, check):
        return [] if self.tool(check) else ["has no tool name"]

    def at_end(self, check, state, first, calls_seen, turns):
        return None if calls_seen.get(self.tool(check)) else (1 if turns else None)


TYPE = ToolNotCalled()
