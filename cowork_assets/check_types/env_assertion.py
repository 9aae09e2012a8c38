"""`env_assertion` (tau2-bench): an assertion function run on the environment after the episode
(`func_name(arguments) == assert_value`, on the agent's or the user's side). A state check: its
arguments describe the end state, not text the agent must see, so it yields no evidence, and replay
cannot decide it."""

from __future__ import annotations

from cowork_assets.check_types._base import CheckType


class EnvAssertion(CheckType):
    name = "env_assertion"
    decidable = False

    def problems(self, check):
        return [] if isinstance(check.get("func_name"), str) else ["has no func_name"]


TYPE = EnvAssertion()
