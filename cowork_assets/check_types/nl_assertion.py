"""`nl_assertion` (tau2-bench): a natural-language assertion an LLM judge checks. Informational here: no
evidence, and replay cannot decide it."""

from __future__ import annotations

from cowork_assets.check_types._base import CheckType


class NlAssertion(CheckType):
    name = "nl_assertion"
    decidable = False

    def problems(self, check):
        return [] if isinstance(check.get("assertion"), str) else ["has no assertion text"]


TYPE = NlAssertion()
