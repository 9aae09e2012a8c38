"""The dataset card: what each stage removed and why, evidence retention, lengths, settings, code version."""

from __future__ import annotations

import hashlib
import subprocess
from importlib import metadata
from pathlib import Path

import orjson

from cowork_assets.markdown import table


def settings_hash(settings: dict) -> str:
    return hashlib.sha256(orjson.dumps(settings, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def code_version() -> str:
    version = metadata.version("cowork-curate")
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
                                cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{version}+{commit}" if commit else version


def histogram(values: list[int], bins: int = 20) -> list[dict]:
    if not values:
        return []
    lo, hi = min(values), max(values)
    width = max(1, -(-(hi - lo + 1) // bins))
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, (v - lo) // width)] += 1
    return [{"from": lo + i * width, "to": lo + (i + 1) * width, "count": c} for i, c in enumerate(counts)]


def svg(bars: list[dict], title: str) -> str:
    """A bar chart of a histogram, as a standalone SVG (no plotting library needed)."""
    w, h, pad = 640, 240, 40
    top = max((b["count"] for b in bars), default=1) or 1
    bw = (w - 2 * pad) / max(1, len(bars))
    rects = "".join(
        f'<rect x="{pad + i * bw:.1f}" y="{h - pad - (h - 2 * pad) * b["count"] / top:.1f}" width="{bw - 2:.1f}" '
        f'height="{(h - 2 * pad) * b["count"] / top:.1f}" fill="#4f46e5"><title>{b["from"]}-{b["to"]}: {b["count"]}</title></rect>'
        for i, b in enumerate(bars))
    labels = (f'<text x="{pad}" y="{h - 12}" font-size="11">{bars[0]["from"] if bars else 0}</text>'
              f'<text x="{w - pad}" y="{h - 12}" font-size="11" text-anchor="end">{bars[-1]["to"] if bars else 0}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif">'
            f'<text x="{pad}" y="20" font-size="13">{title}</text>{rects}{labels}</svg>')


def vega_lite(bars: list[dict], title: str) -> dict:
    return {"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "title": title, "data": {"values": bars},
            "mark": "bar", "encoding": {"x": {"field": "from", "type": "quantitative", "bin": {"binned": True},
                                              "title": "characters"}, "x2": {"field": "to"},
                                        "y": {"field": "count", "type": "quantitative"}}}


def build_card(dataset: str, version: str, previous: str | None, rows: dict, funnel: list[tuple[str, int]],
               reasons: list[tuple], retention: dict, lengths: list[int], settings: dict) -> dict:
    bars = histogram(lengths)
    return {
        "dataset": dataset, "version": version, "previous_version": previous, "rows": rows,
        "funnel": [{"stage": s, "remaining": n} for s, n in funnel],
        "drop_reasons": [{"stage": s, "reason": r, "count": n} for s, r, n in reasons],
        "evidence_retention": retention,
        "length_histogram": bars, "length_chart": vega_lite(bars, f"{dataset}: characters per sample"),
        "settings": settings, "settings_hash": settings_hash(settings), "code_version": code_version(),
    }


def render_markdown(card: dict) -> str:
    lines = [f"# {card['dataset']} {card['version']}", "",
             f"Previous version: {card['previous_version'] or 'none'} · settings hash `{card['settings_hash']}` · "
             f"code {card['code_version']}", "", "## Rows", "",
             table(["part", "rows"], card["rows"].items()), "", "## From raw to published", "",
             table(["after stage", "remaining"], [(f["stage"], f["remaining"]) for f in card["funnel"]]), "",
             "## Why samples were removed", "",
             table(["stage", "reason", "count"], [(d["stage"], d["reason"], d["count"]) for d in card["drop_reasons"]])]
    if card["evidence_retention"]:
        lines += ["", "## Evidence retention (at-risk values of passing teacher runs)", "",
                  table(["strategy", "retained", "at risk", "share"], [
                      (k, v["retained"], v["at_risk"], f"{v['share']:.1%}") for k, v in card["evidence_retention"].items()])]
    if card["length_histogram"]:
        lines += ["", "## Length distribution", "", "![characters per sample](lengths.svg)", "",
                  "(Vega-Lite spec in card.json under `length_chart`.)"]
    lines += ["", "## Settings", "", table(["setting", "value"], sorted(card["settings"].items()))]
    return "\n".join(lines) + "\n"
