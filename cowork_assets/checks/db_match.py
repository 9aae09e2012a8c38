"""`db_match` (tau2-bench): the database after the run equals the one the reference actions produce.
The values it depends on are the reference actions' arguments, which are `tool_called` checks of the
same task; this check itself yields no evidence, and replay cannot decide it."""

from __future__ import annotations

from cowork_assets.checks._base import CheckType


class DbMatch(CheckType):
    name = "db_match"
    decidable = False


TYPE = DbMatch()
