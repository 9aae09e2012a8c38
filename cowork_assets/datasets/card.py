"""The dataset card: what each criterion removed and why, evidence retention, lengths, settings, code version."""

from __future__ import annotations

import base64
import functools
import hashlib
import math
import subprocess
from importlib import metadata
from pathlib import Path

import orjson
import polars as pl

from cowork_assets.curation.sweep import recommendation
from cowork_assets.markdown import table


def settings_hash(settings: dict) -> str:
    return hashlib.sha256(orjson.dumps(settings, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


@functools.cache
def code_version() -> str:
    """The package version and the checkout's commit: once per process (every batch check reads it, and two
    processes must not disagree because one `git` was slow)."""
    version = metadata.version("cowork-curate")
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=Path(__file__).parent,
        ).stdout.strip()
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
        f'height="{(h - 2 * pad) * b["count"] / top:.1f}" fill="#4f46e5">'
        f"<title>{b['from']}-{b['to']}: {b['count']}</title></rect>"
        for i, b in enumerate(bars)
    )
    labels = (
        f'<text x="{pad}" y="{h - 22}" font-size="11">{bars[0]["from"] if bars else 0}</text>'
        f'<text x="{w - pad}" y="{h - 22}" font-size="11" text-anchor="end">{bars[-1]["to"] if bars else 0}</text>'
        f'<text x="{pad - 6}" y="{pad + 4}" font-size="10" text-anchor="end">{top}</text>'
        + _axes(w, h, pad, "characters per sample", "samples")
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif">'
        f'<text x="{pad}" y="20" font-size="13">{title}</text>{rects}{labels}</svg>'
    )


def _axes(w: int, h: int, pad: int, x_title: str, y_title: str) -> str:
    """The axis titles: the x axis's under it, the y axis's turned along it."""
    return (
        f'<text x="{w / 2:.0f}" y="{h - 4}" font-size="11" text-anchor="middle">{x_title}</text>'
        f'<text x="12" y="{h / 2:.0f}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 12 {h / 2:.0f})">{y_title}</text>'
    )


def vega_lite(bars: list[dict], title: str) -> dict:
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": title,
        "data": {"values": bars},
        "mark": "bar",
        "encoding": {
            "x": {"field": "from", "type": "quantitative", "bin": {"binned": True}, "title": "characters per sample"},
            "x2": {"field": "to"},
            "y": {"field": "count", "type": "quantitative", "title": "samples"},
        },
    }


COLOURS = {"head": "#dc2626", "tail": "#d97706", "middle": "#2563eb", "evidence_aware": "#059669"}


def sweep_svg(sweep: list[dict], title: str) -> str:
    """Lost share of at-risk evidence against the allowance (log scale), one line per strategy, as SVG."""
    w, h, pad = 640, 280, 48
    sizes = sorted({r["max_observation_chars"] for r in sweep})
    if not sizes:
        return ""
    span = math.log(sizes[-1] / sizes[0]) or 1.0

    def x(n: int) -> float:
        return pad + (w - 2 * pad) * math.log(n / sizes[0]) / span

    def y(share: float) -> float:
        return h - pad - (h - 2 * pad) * share

    parts = [
        f'<text x="{pad}" y="20" font-size="13">{title}</text>',
        f'<line x1="{pad}" y1="{y(0):.1f}" x2="{w - pad}" y2="{y(0):.1f}" stroke="#999"/>',
        f'<text x="{pad - 6}" y="{y(1):.1f}" font-size="10" text-anchor="end">100%</text>',
        f'<text x="{pad - 6}" y="{y(0):.1f}" font-size="10" text-anchor="end">0%</text>',
    ]
    parts += [f'<text x="{x(n):.1f}" y="{h - pad + 16}" font-size="10" text-anchor="middle">{n}</text>' for n in sizes]
    parts.append(_axes(w, h, pad, "max_observation_chars (log scale)", "at-risk evidence lost"))
    for i, (strategy, colour) in enumerate(COLOURS.items()):
        points = [(x(r["max_observation_chars"]), y(r["lost_share"])) for r in sweep if r["strategy"] == strategy]
        if points:
            parts.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
                + " ".join(f"{a:.1f},{b:.1f}" for a, b in points)
                + '"/>'
            )
            parts.append(
                f'<text x="{w - pad - 110}" y="{40 + 14 * i}" font-size="11" fill="{colour}">{strategy}</text>'
            )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif">'
        + "".join(parts)
        + "</svg>"
    )


def build_card(
    dataset: str,
    version: str,
    previous: str | None,
    rows: dict,
    funnel: list[tuple[str, int]],
    reasons: list[tuple],
    retention: dict,
    lengths: list[int],
    settings: dict,
    sweep: list[dict] | None = None,
    token_lengths: list[dict] | None = None,
    terminal_text: dict | None = None,
    budgets: list[dict] | None = None,
    redactions: list[dict] | None = None,
    previous_rows: int | None = None,
    batches: list[dict] | None = None,
    decontamination: dict | None = None,
    pairs: list[dict] | None = None,
) -> dict:
    bars = histogram(lengths)
    sweep = sweep or []
    return {
        "dataset": dataset,
        "version": version,
        "previous_version": previous,
        "rows": rows,
        "previous_rows": previous_rows,
        "batches": batches or [],
        "funnel": [{"step": s, "remaining": n} for s, n in funnel],
        "drop_reasons": [{"criterion": s, "reason": r, "count": n} for s, r, n in reasons],
        "evidence_retention": retention,
        "truncation_sweep": sweep,
        "rollout_truncation": recommendation(pl.DataFrame(sweep)) if sweep else [],
        "length_histogram": bars,
        "token_lengths": token_lengths or [],
        "terminal_text": terminal_text,
        "budgets": budgets or [],
        "redactions": redactions or [],
        "decontamination": decontamination or {},
        "pairs": pairs or [],
        "length_chart": vega_lite(bars, f"{dataset}: characters per sample"),
        "settings": settings,
        "settings_hash": settings_hash(settings),
        "code_version": code_version(),
    }


CHARTS = ("lengths.svg", "sweep.svg")  # the chart files beside a version's card.md


def inline_charts(markdown: str, charts: dict[str, str], as_link: bool = False) -> str:
    """The card's Markdown with its charts (`![...](lengths.svg)`) as data URIs of the SVG texts in `charts`: the
    Dagster UI shows a card from its metadata, where a link relative to the card's folder would point at the UI's
    own server. `as_link`: `charts` holds other links to the files instead."""
    for name, value in charts.items():
        uri = value if as_link else "data:image/svg+xml;base64," + base64.b64encode(value.encode()).decode()
        markdown = markdown.replace(f"]({name})", f"]({uri})")
    return markdown


def upgraded(card: dict) -> dict:
    """A card as this version writes it, from one an earlier release wrote: the funnel's `stage` is now `step`,
    a drop reason's `stage` now `criterion`, and sections added since are empty."""
    earlier = {"evidence_retention": {}, "length_histogram": [], "rows": {}, "previous_version": None}
    card = {**earlier, "settings_hash": "unknown", "code_version": "unknown", **card}
    card["funnel"] = [{"step": f.get("step", f.get("stage")), **f} for f in card.get("funnel") or []]
    card["drop_reasons"] = [
        {"criterion": d.get("criterion", d.get("stage")), **d} for d in card.get("drop_reasons") or []
    ]
    return card


def render_markdown(card: dict) -> str:
    card = upgraded(card)
    lines = [
        f"# {card['dataset']} {card['version']}",
        "",
        f"Previous version: {card['previous_version'] or 'none'} · settings hash `{card['settings_hash']}` · "
        f"code {card['code_version']}",
        "",
        "## Rows",
        "",
        table(["part", "rows"], card["rows"].items()),
        *(
            ["", f"The previous version had {card['previous_rows']} rows; this one has {sum(card['rows'].values())}."]
            if card.get("previous_rows") is not None
            else []
        ),
        "",
        "## From raw to published",
        "",
        table(["step", "remaining"], [(f["step"], f["remaining"]) for f in card["funnel"]]),
        "",
        "## Why samples were removed",
        "",
        table(
            ["criterion", "reason", "count"], [(d["criterion"], d["reason"], d["count"]) for d in card["drop_reasons"]]
        ),
    ]
    if card["dataset"] == "sft_dataset":
        lines += ["", "## Message form", "", _message_form(card.get("settings") or {})]
    if pairs := card.get("pairs"):
        lines += [
            "",
            "## Pairs",
            "",
            "Per source (the task category): pairs, the tasks they come from, and the score margins between the chosen "
            "and the rejected run. Why the other runs are in no pair: the table above and `exclusions` "
            "(`dataset` = preference).",
            "",
            table(
                ["category", "pairs", "tasks", "mean margin", "margin 1.0"],
                [(p["category"], p["pairs"], p["tasks"], p["mean_margin"], p["margin_1"]) for p in pairs],
            ),
        ]
    if checked := card.get("decontamination"):
        lines += [
            "",
            "## Benchmarks held out",
            "",
            "A run is held out when its task is a listed test task (ids compared after normalisation) or when its "
            "request contains a test task's own text (`holdout_overlap` of its word 13-grams).",
            "",
            table(
                ["benchmark", "test tasks", "runs held out by id", "runs held out by text"],
                [
                    (c["benchmark"], c["test_tasks"], c["runs_held_out_by_id"], c["runs_held_out_by_text"])
                    for c in checked["checked"]
                ],
            ),
            "",
            "Not checked: " + ("; ".join(checked["not_checked"]) or "none") + ".",
        ]
    if card["evidence_retention"]:
        lines += [
            "",
            "## Evidence retention (at-risk values of passing teacher runs)",
            "",
            table(
                ["strategy", "retained", "at risk", "share"],
                [(k, v["retained"], v["at_risk"], f"{v['share']:.1%}") for k, v in card["evidence_retention"].items()],
            ),
        ]
    if card.get("truncation_sweep"):
        lines += [
            "",
            "## Truncation at rollout time (at-risk evidence lost, every batch)",
            "",
            "![lost share against allowance](sweep.svg)",
            "",
            table(
                ["strategy", "allowance", "at risk", "lost", "lost share"],
                [
                    (
                        r["strategy"],
                        r["max_observation_chars"],
                        r["at_risk_items"],
                        r["lost_items"],
                        f"{r['lost_share']:.1%}",
                    )
                    for r in card["truncation_sweep"]
                ],
            ),
            "",
            "Smallest allowance per side that keeps 99% (verl `actor_rollout_ref.rollout.multi_turn`):",
            "",
            *[f"- {line}" for line in card["rollout_truncation"]],
        ]
    if card["length_histogram"]:
        lines += [
            "",
            "## Length distribution",
            "",
            "![characters per sample](lengths.svg)",
            "",
            "(Vega-Lite spec in card.json under `length_chart`.)",
        ]
    if card.get("budgets"):
        lines += [
            "",
            "## Sample budget per category",
            "",
            table(
                ["category", "characters", "tokens"],
                [(b["category"], b["char_budget"], b["token_budget"] or "none") for b in card["budgets"]],
            ),
        ]
    if card.get("redactions"):
        lines += [
            "",
            "## Secrets redacted",
            "",
            table(["kind", "placeholders"], [(r["kind"], r["count"]) for r in card["redactions"]]),
        ]
    if card.get("terminal_text"):
        t = card["terminal_text"]
        lines += [
            "",
            f"Terminal text in observations: {t['chars']} control characters (ANSI escapes, carriage-return "
            f"overwrites, others) removed or replaced in {t['messages']} messages.",
        ]
    if card.get("token_lengths"):
        over = [k for k in card["token_lengths"][0] if k.startswith("over_")]
        lines += [
            "",
            "## Rows longer than a trainer's max_length (tokens)",
            "",
            "A trainer cuts these at that `max_length`, losing the end of the last assistant turn; "
            "`token_budget` set to the trainer's `max_length` keeps them out instead. "
            + _counted_in(card.get("settings") or {}),
            "",
            table(
                ["split", "category", "rows", "max tokens", *(f"> {k.removeprefix('over_')}" for k in over)],
                [
                    (r["split"], r["category"], r["rows"], r["max_tokens"], *(r[k] for k in over))
                    for r in card["token_lengths"]
                ],
            ),
        ]
    if batches := card.get("batches"):
        held = [b for b in batches if b.get("held_back")]
        overridden = [b for b in batches if b["failed_error_checks"] and not b.get("held_back")]
        lines += [
            "",
            "## Batches",
            "",
            f"Built from {len(batches) - len(held)} batch(es), each processed with the settings below (settings "
            f"fingerprint `{batches[0]['settings']}`)"
            + (", published although ERROR checks failed (publish_despite_failed_checks):" if overridden else ".")
            + (
                " Held back, their runs in no dataset (hold_back_refused_batches): "
                + ", ".join(b["batch"] for b in held)
                + "."
                if held
                else ""
            ),
            "",
            table(
                ["batch", "run", "ERROR checks failed", "published"],
                [
                    (
                        b["batch"],
                        b["run_id"] or "unknown",
                        ", ".join(b["failed_error_checks"]) or "none",
                        "no: held back" if b.get("held_back") else "yes",
                    )
                    for b in batches
                ],
            ),
        ]
    lines += ["", "## Settings", "", table(["setting", "value"], sorted(card["settings"].items()))]
    return "\n".join(lines) + "\n"


def _message_form(settings: dict) -> str:
    """What publication changed in the messages the agents saw (`chat_form`), so the official chat templates render
    every row."""
    common = (
        'Every message renders under the official chat templates: `content` is text (`""` for a turn that only '
        "calls tools), the system messages a harness wrote first are one, a later one and a tool message that "
        "answers no call are user turns, and a sample ends at its last assistant turn. "
    )
    if settings.get("action_format") == "tool_calls":
        return common + (
            "Text-protocol runs (shell blocks or XML-style calls in the assistant's text) are published as tool "
            "calls, the executed block taken out of the text, with a tool list their agents never saw "
            "(`action_format=tool_calls`)."
        )
    return common + (
        "Text-protocol runs are published as their agents acted, with no tool list: their actions are shell blocks "
        "in the text, their outputs user turns (`action_format=native`)."
    )


def _counted_in(settings: dict) -> str:
    if settings.get("tokenizer"):
        return "Tokens of each row as the `tokenizer`'s chat template renders it, tools included."
    return f"Tokens of each row's texts in tiktoken's `{settings.get('token_encoding', 'o200k_base')}`, no template."
