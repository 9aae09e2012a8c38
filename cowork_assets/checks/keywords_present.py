"""`keywords_present`: every keyword appears in one assistant message's text (normalised). The keywords
are evidence the grader looks for."""

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
        return [normalise(str(k)) for k in check.get("keywords") or []]

    def on_turn(self, keywords, state, text):
        return all(k in text() for k in keywords)


TYPE = KeywordsPresent()
