"""`state_equals`: the service state at `path` equals `value` after the run. Its value is evidence; a
transcript cannot show the final state, so replay cannot decide it."""

from __future__ import annotations

from cowork_assets.check_types._base import CheckType
from cowork_assets.values import leaves


class StateEquals(CheckType):
    name = "state_equals"
    decidable = False

    def problems(self, check):
        return [] if isinstance(check.get("path"), str) and "value" in check else ["needs a path and a value"]

    def evidence(self, check, enums):
        return (("derived", leaf) for leaf in leaves(check.get("value")))


TYPE = StateEquals()
