"""`keywords_present`: every keyword appears in one assistant message's text, compared normalised
(case-folded, a number also without its thousands separators), or with `"normalize": "tau_bench"` as
tau-bench and tau2 compare (lower-cased, every comma removed). The keywords are evidence the grader
looks for."""

from __future__ import annotations

from cowork_assets.checks._base import CheckType
from cowork_assets.evidence.values import normalise


class KeywordsPresent(CheckType):
    name = "keywords_present"
    per_turn = True

    def problems(self, check):
        keywords = check.get("keywords")
        return [] if isinstance(keywords, list) and keywords else ["has no keywords list"]

    def evidence(self, check, enums):
        return (("named", kw) for kw in check.get("keywords") or [])

    def prepare(self, check):
        if check.get("normalize") == "tau_bench":
            return "tau_bench", [str(k).lower().replace(",", "") for k in check.get("keywords") or []]
        return "normalised", [normalise(str(k)) for k in check.get("keywords") or []]

    def on_turn(self, prepared, state, turn):
        form, keywords = prepared
        text = getattr(turn, form)
        return all(k in text for k in keywords)


TYPE = KeywordsPresent()
