"""`keywords_present`: every keyword appears in one assistant message's text, matched as evidence is
(case-folded, on token boundaries, a number also with its thousands separators: `1,234.50` shows
`1234.50`), or with `"normalize": "tau_bench"` as tau-bench and tau2 compare (lower-cased, every comma
removed, as a substring). The keywords are evidence the grader looks for."""

from __future__ import annotations

from cowork_assets.check_types._base import CheckType
from cowork_assets.values import normalise


class KeywordsPresent(CheckType):
    name = "keywords_present"
    per_turn = True

    def problems(self, check):
        keywords = check.get("keywords")
        return [] if isinstance(keywords, list) and keywords else ["has no keywords list"]

    def evidence(self, check, enums):
        return (("named", kw) for kw in _keywords(check))

    def prepare(self, check):
        if check.get("normalize") == "tau_bench":
            return "tau_bench", [str(k).lower().replace(",", "") for k in _keywords(check)]
        return "normalised", [normalise(str(k)) for k in _keywords(check)]

    def on_turn(self, prepared, state, turn):
        form, keywords = prepared
        if form == "tau_bench":
            return all(k in turn.tau_bench for k in keywords)
        return all(turn.shows(k) for k in keywords)

    rank = 30

    def why_unmet(self, unmet, calls_seen):
        keywords = ", ".join(str(u.check.get("keywords")) for u in unmet)
        return "output not found", f"{', '.join(u.label for u in unmet)}: {keywords}"

    def why_met(self, labels):
        return "recorded output missing", labels


def _keywords(check: dict) -> list:
    """The check's keywords: its `keywords` list (anything else names none: `problems` says so)."""
    keywords = check.get("keywords")
    return keywords if isinstance(keywords, list) else []


TYPE = KeywordsPresent()
