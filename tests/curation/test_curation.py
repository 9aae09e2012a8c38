"""Curation: spans and markers, truncation strategies, the budget, and the evidence audit."""

import json
import random
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from cowork_assets.curation.curate import curate_chunk
from cowork_assets.curation.truncate import Shown
from cowork_assets.evidence.build import build_evidence
from cowork_assets.settings import CurationSettings
from cowork_assets.store.registry import TABLES
from cowork_assets.tokens import count_tokens
from cowork_assets.truncation import strategies
from cowork_assets.truncation.spans import MARKER_RE, SPAN, evidence_spans, merge, render, total
from cowork_assets.values import normalise
from tests.conftest import ROOT
from tests.helpers import call, flatten, result, trajectory


def test_merge_sorts_and_joins_overlapping_and_adjacent_spans():
    assert merge([(10, 20), (0, 5), (5, 8), (15, 30), (40, 40)]) == [(0, 8), (10, 30)]


def test_marker_format_says_how_much_was_cut():
    assert render("abcdefghij", [(0, 3), (6, 8)]) == "abc[...3 chars cut...]gh[...2 chars cut...]"
    assert render("abcdefghij", [(2, 10)]) == "[...2 chars cut...]cdefghij"
    assert [int(n) for n in MARKER_RE.findall(render("x" * 50, [(10, 20)]))] == [10, 30]


@pytest.mark.parametrize(
    "length, allowance, cores, context, spans, overflow",
    [
        (3000, 1000, [(2500, 2510)], 60, [(0, 870), (2440, 2570)], 0),  # window first, the head gets the rest
        (3000, 1000, [(100, 110)], 60, [(0, 1000)], 0),  # evidence inside the head: plain head
        (3000, 1000, [(950, 1100)], 60, [(0, 730), (890, 1160)], 0),  # evidence straddling the cut
        (3000, 20, [(100, 110), (2000, 2015)], 60, [(100, 110), (2000, 2015)], 5),  # evidence alone exceeds: overflow
        (3000, 40, [(100, 110), (2000, 2010)], 60, [(95, 115), (1995, 2015)], 0),  # context shrinks to fit
        (500, 1000, [(400, 410)], 60, [(0, 500)], 0),  # shorter than the allowance: all of it
    ],
)
def test_evidence_spans(length, allowance, cores, context, spans, overflow):
    got, over = evidence_spans(length, allowance, cores, context)
    assert (got, over) == (spans, overflow)
    assert total(got) <= max(allowance, total(merge(cores))) or over


def test_evidence_aware_spans_for_many_observations_at_once_are_evidence_spans_one_at_a_time(monkeypatch):
    """The strategy computes its spans in polars where the windows of full context fit (or the evidence alone does
    not), and by `evidence_spans` where they must narrow: on random observations (evidence overlapping, touching,
    beyond the text, near both ends), every row's spans and overflow are what `evidence_spans` gives it, and
    `kept_chars` counts them."""
    from cowork_assets.truncation.strategies import evidence_aware

    rng = random.Random(5)
    rows = []
    for _ in range(400):
        length = rng.randint(1, 6000)
        cores = []
        for _ in range(rng.randint(1, 6)):
            start = rng.randint(-50, length + 50)
            cores.append({"start": start, "end": start + rng.randint(0, 300)})
        rows.append({"length": length, "cores": cores})
    observations = pl.DataFrame(rows, schema={"length": pl.Int64, "cores": pl.List(SPAN)})
    narrowed = []  # the rows the strategy leaves to evidence_spans
    monkeypatch.setattr(evidence_aware, "evidence_spans", lambda *a: narrowed.append(a) or evidence_spans(*a))
    overflowing = 0
    for allowance, context in [(1000, 60), (200, 50), (50, 0), (3000, 400)]:
        got = evidence_aware.kept(observations, allowance, context)
        expected = [
            evidence_spans(r["length"], allowance, [(c["start"], c["end"]) for c in r["cores"]], context) for r in rows
        ]
        assert got["kept_spans"].to_list() == [[{"start": s, "end": e} for s, e in spans] for spans, _ in expected]
        assert got["overflow_chars"].to_list() == [over for _, over in expected]
        overflowing += sum(over > 0 for _, over in expected)
        # The sweep's count of a long observation's kept characters, taken without its spans, is theirs.
        long = observations.with_row_index("message_index").filter(pl.col("length") > allowance)
        kept = evidence_aware.kept_chars(long.with_columns(trajectory_id=pl.lit("t")), allowance, context)
        assert kept["kept_chars"].to_list() == [
            total(s) for (s, _), r in zip(expected, rows) if r["length"] > allowance
        ]
    assert overflowing > 0 and narrowed and overflowing + len(narrowed) < 4 * len(rows)  # all three ways are taken


def _curate(*trajs, **params):
    f = flatten(*trajs)
    ev, _ = build_evidence("b", f["trajectories"], f["task_packages"], f["tool_calls"], f["messages"])
    return curate_chunk("b", f["trajectories"], f["messages"], ev, CurationSettings(**params))


USER_LS = {"role": "user", "content": "Run the tests."}


def _sample(tid="t1", n_obs=1, obs_len=3000, target_at=2500):
    """A trajectory whose needed id sits at `target_at` in each long observation."""
    messages = [{"role": "user", "content": "Find the record and send it."}]
    for i in range(n_obs):
        body = "x" * (target_at - 1) + f" id_{i:05d}77 " + "y" * (obs_len - target_at - 11)  # id at target_at
        messages += [
            call("lookup", {"q": "x"}, f"c{i}a"),
            result(body, f"c{i}a"),
            call("send", {"record": f"id_{i:05d}77"}, f"c{i}b"),
            result("ok", f"c{i}b"),
        ]
    messages.append({"role": "assistant", "content": "Sent."})
    return trajectory(messages, tid=tid)


def test_head_keeps_the_first_n_characters_and_loses_evidence_beyond():
    out = _curate(_sample(), truncation_strategy="head", max_observation_chars=1000)
    obs = out["curated_messages"].filter(pl.col("role") == "tool", pl.col("truncated")).row(0, named=True)
    assert obs["content"] == "x" * 1000 + "[...2000 chars cut...]"
    assert (obs["original_chars"], obs["kept_chars"], obs["kept_spans"]) == (3000, 1000, [{"start": 0, "end": 1000}])
    audit = out["evidence_audit"]
    assert audit.select("value", "lost_under", "lost_to_truncation").rows() == [
        ("id_0000077", ["head"], True)
    ]  # at offset 2,500 of 3,000: the last 500 (middle) and 1,000 (tail) keep it


def test_evidence_aware_keeps_a_window_around_the_evidence_within_the_allowance():
    out = _curate(_sample(), max_observation_chars=1000, evidence_context_chars=30)
    obs = out["curated_messages"].filter(pl.col("role") == "tool", pl.col("truncated")).row(0, named=True)
    assert obs["kept_chars"] == 1000 and obs["overflow_chars"] == 0
    assert "id_0000077" in obs["content"] and len(MARKER_RE.findall(obs["content"])) == 2
    assert out["evidence_audit"]["lost_to_truncation"].to_list() == [False]
    stats = out["sample_stats"].row(0, named=True)
    under = {c["strategy"]: c["chars"] for c in stats["chars_under"]}
    assert set(under) == {"evidence_aware", "head", "middle", "tail"} and stats["verdict"] == "kept"
    assert (
        under["head"]
        == under["tail"]
        == under["middle"]
        == stats["chars_before"] - 2000 + len("[...2000 chars cut...]")
    )


def test_a_value_survives_while_any_occurrence_before_use_is_kept():
    span = pl.Struct({"start": pl.Int64, "end": pl.Int64})
    occurrences = pl.DataFrame(  # (trajectory, value, message, offset, length)
        [
            ("t", "kept", 2, 0, 5),  # cut away in message 2 ...
            ("t", "kept", 4, 10, 5),  # ... kept in message 4
            ("t", "whole", 2, 0, 5),  # cut away in message 2, but message 6 is not cut
            ("t", "whole", 6, 0, 5),
            ("t", "gone", 2, 0, 5),  # cut away wherever it was shown
            ("t", "gone", 4, 100, 5),
            ("u", "edge", 2, 98, 5),  # one character beyond the kept span
        ],
        schema=["trajectory_id", "norm", "message_index", "offset", "length"],
        orient="row",
        schema_overrides={"message_index": pl.Int32},
    )
    cuts = pl.DataFrame(
        {
            "trajectory_id": ["t", "t", "u"],
            "message_index": [2, 4, 2],
            "kept_spans": [[{"start": 50, "end": 60}], [{"start": 0, "end": 20}], [{"start": 0, "end": 102}]],
        },
        schema_overrides={"message_index": pl.Int32, "kept_spans": pl.List(span)},
    )
    shown = Shown(occurrences)
    # Several cuts tested together: this one, one that leaves message 2 whole, and one that cuts nothing.
    survival = shown.survival({"a": cuts, "b": cuts.filter(pl.col("message_index") == 4), "none": cuts.clear()})
    assert survival.columns == ["trajectory_id", "norm", "survives_a", "survives_b", "survives_none"]
    assert sorted(survival.rows()) == [
        ("t", "gone", False, True, True),
        ("t", "kept", True, True, True),
        ("t", "whole", True, True, True),
        ("u", "edge", False, True, True),
    ]
    assert sorted(shown.lost(cuts.filter(pl.col("message_index") == 4)).rows()) == []
    assert sorted(shown.lost(cuts).rows()) == [("t", "gone"), ("u", "edge")]
    both = pl.concat(
        [cuts.with_columns(cut=pl.lit(1)), cuts.filter(pl.col("message_index") == 2).with_columns(cut=pl.lit(2))]
    )
    assert sorted(shown.lost(both, by=("cut",)).rows()) == [(1, "t", "gone"), (1, "u", "edge"), (2, "u", "edge")]


def test_drop_policy_drops_and_loses_every_item():
    big = _sample(n_obs=8)  # 8 observations of ~1000 kept chars each
    out = _curate(big, char_budget=5000, budget_policy="drop")
    stats = out["sample_stats"].row(0, named=True)
    assert stats["verdict"] == "dropped" and stats["reason"].startswith("over budget:")
    assert out["evidence_audit"]["lost_to_budget"].all() and not out["evidence_audit"]["lost_to_truncation"].any()


def test_trim_policy_shortens_oldest_observations_to_their_evidence_and_keeps_it():
    out = _curate(_sample(n_obs=8), char_budget=5000, budget_policy="trim", evidence_context_chars=20)
    stats = out["sample_stats"].row(0, named=True)
    curated = out["curated_messages"]
    assert stats["verdict"] == "trimmed" and stats["chars_after"] <= 5000
    assert stats["chars_after"] == curated["chars"].sum()
    assert stats["tokens_after"] is None  # no token budget: tokens are counted only for published samples
    trimmed = curated.filter(pl.col("trimmed")).sort("message_index")
    assert trimmed.height == stats["trimmed_messages"] > 0
    # the oldest observations were trimmed first, each down to its evidence window
    tool_indexes = curated.filter(pl.col("role") == "tool", pl.col("truncated"))["message_index"].to_list()
    assert trimmed["message_index"].to_list() == tool_indexes[: trimmed.height]
    assert all(k == 10 + 2 * 20 for k in trimmed["kept_chars"])
    assert not out["evidence_audit"]["lost_to_budget"].any()


def test_trim_that_cannot_fit_drops_with_reason():
    out = _curate(_sample(n_obs=8), char_budget=200, budget_policy="trim")
    stats = out["sample_stats"].row(0, named=True)
    assert stats["verdict"] == "dropped" and "over budget after trimming 8 observation(s)" in stats["reason"]


def test_token_budget_counts_the_curated_text_and_applies_too():
    sample = _sample(n_obs=2)
    out = _curate(sample, token_budget=100000)
    assert out["sample_stats"]["verdict"].to_list() == ["kept"]
    curated = out["curated_messages"]
    calls = curated["tool_calls"].to_list()
    texts = [
        (c or "") + "\n" + "\n".join(f"{x['name']} {x['arguments']}" for x in k)
        for c, k in zip(curated["content"].to_list(), calls)
    ]
    assert out["sample_stats"]["tokens_after"].to_list() == [sum(count_tokens(texts, "o200k_base"))]
    dropped = _curate(sample, token_budget=50, budget_policy="drop")["sample_stats"].row(0, named=True)
    assert dropped["verdict"] == "dropped" and dropped["reason"].endswith(f"{dropped['tokens_after']} tokens")
    full = _curate(_sample(n_obs=8), token_budget=10**6)["sample_stats"]["tokens_after"][0]
    trimmed = _curate(_sample(n_obs=8), token_budget=full * 3 // 4, budget_policy="trim", evidence_context_chars=20)
    stats = trimmed["sample_stats"].row(0, named=True)
    assert stats["verdict"] == "trimmed" and stats["tokens_after"] <= full * 3 // 4 < full
    assert not trimmed["evidence_audit"]["lost_to_budget"].any()


# The synthetic ground truth, through the whole pipeline (default settings: evidence_aware, trim).


def _labels(raw, allowance=1000):
    needed = [json.loads(l) for l in (raw / "needed_values.jsonl").read_text().splitlines()]
    return {
        (n["trajectory_id"], normalise(n["value"]))
        for n in needed
        if n["role"] == "tool" and n["offset"] + n["length"] > allowance
    }


def test_every_value_beyond_the_allowance_is_lost_under_head_kept_under_evidence_aware(pipeline, default_raw):
    settings, _, _ = pipeline
    audit = TABLES["evidence_audit"].scan(settings.root).collect()
    lost_head = set(
        audit.filter(pl.col("lost_under").list.contains("head"))
        .select("trajectory_id", pl.col("value").map_elements(normalise, return_dtype=pl.String))
        .iter_rows()
    )
    assert lost_head == _labels(default_raw) and len(lost_head) > 300  # nothing unlabelled is reported lost
    assert not audit["lost_under"].list.contains("evidence_aware").any() and not audit["lost_to_truncation"].any()
    assert not audit["lost_to_budget"].any()  # trim keeps evidence


def test_over_budget_samples_are_trimmed_by_default(pipeline, labels):
    settings, _, _ = pipeline
    stats = TABLES["sample_stats"].scan(settings.root).collect()
    over = {l["trajectory_id"] for l in labels if l["kind"] == "over_budget"}
    assert set(stats.filter(pl.col("verdict") != "kept")["trajectory_id"]) == over and over
    assert set(stats.filter(pl.col("verdict") == "trimmed")["trajectory_id"]) == over
    assert (stats["chars_after"] <= settings.char_budget).all()


def test_head_and_drop_fail_the_checks_with_named_values(default_raw, tmp_path, labels):
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_cli.runner import ensure_instance, materialize_all

    batch = next(l["batch"] for l in labels if l["kind"] == "over_budget")
    settings = CurateSettings(
        raw_root=str(default_raw), data_root=str(tmp_path / "d"), truncation_strategy="head", budget_policy="drop"
    )
    outcome = materialize_all(settings, ensure_instance(tmp_path / "home"), only=[batch], echo=lambda _: None)
    assert list(outcome.failed) == ["publication"]  # the failed ERROR checks block publication, named
    assert (
        f"{batch} (evidence_audit:evidence_lost_to_truncation, sample_stats:evidence_lost_to_budget)"
        in (outcome.failed["publication"])
    )
    assert f"evidence_audit:evidence_lost_to_truncation [{batch}] (ERROR)" in outcome.failed_checks
    details = outcome.check_details[f"evidence_audit:evidence_lost_to_truncation [{batch}] (ERROR)"]
    lost = TABLES["evidence_audit"].scan(settings.root).collect().filter(pl.col("lost_to_truncation"))
    assert lost.height and lost["value"][0] in details and "kept 0–1000" in details
    stats = TABLES["sample_stats"].scan(settings.root).collect()
    over = {l["trajectory_id"] for l in labels if l["kind"] == "over_budget" and l["batch"] == batch}
    assert set(stats.filter(pl.col("verdict") == "dropped")["trajectory_id"]) == over


def test_a_new_truncation_strategy_is_one_module(tmp_path):
    """Added to truncation/strategies/, a module can be configured, and is audited and swept like the others
    through the same schemas: here a copy of `tail` under another name must give exactly tail's results.
    (The module is added from a folder the package also searches, in a fresh process, before anything else
    of the pipeline is imported: the source tree is not touched.)"""
    folder = Path(strategies.__file__).parent
    (tmp_path / "zz_last_chars.py").write_text((folder / "tail.py").read_text())
    code = """
import json, polars as pl
import cowork_assets.truncation.strategies as strategies
strategies.__path__.append(FOLDER)
strategies.registry.cache_clear()
from tests.helpers import flatten
from tests.curation.test_curation import _curate, _sample
from cowork_assets.curation.schemas import EvidenceAudit, SampleStats, TruncationSweep
from cowork_assets.curation.sweep import sweep
from cowork_assets.evidence.build import build_evidence
traj = _sample(target_at=200)
out = {s: _curate(traj, max_observation_chars=1000, truncation_strategy=s) for s in ("tail", "zz_last_chars")}
for o in out.values():
    EvidenceAudit.validate(o["evidence_audit"]); SampleStats.validate(o["sample_stats"])
f = flatten(traj)
evidence, _ = build_evidence("b", f["trajectories"], f["task_packages"], f["tool_calls"], f["messages"])
swept = sweep(f["trajectories"], f["messages"], evidence, 60, (1000,)).with_columns(batch=pl.lit("b"))
TruncationSweep.validate(swept)
texts = [o["curated_messages"]["content"] for o in out.values()]
print(json.dumps({
    "same_text": texts[0].equals(texts[1]),
    "lost_under": out["tail"]["evidence_audit"]["lost_under"].to_list(),
    "chars": {c["strategy"]: c["chars"] for c in out["tail"]["sample_stats"]["chars_under"][0]},
    "swept": {r["strategy"]: [r["lost_items"], r["kept_chars"]] for r in swept.to_dicts()}}))
""".replace("FOLDER", repr(str(tmp_path)))
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout)
    assert found["same_text"] and found["lost_under"] == [["tail", "zz_last_chars"]]
    assert found["chars"]["zz_last_chars"] == found["chars"]["tail"] == found["chars"]["head"]  # 1,000 + a marker
    assert found["swept"]["zz_last_chars"] == found["swept"]["tail"] == [1, 1002]  # and the 2 chars of "ok"
    assert found["swept"]["head"] == [0, 1002]


def test_terminal_text_in_observations_is_shown_as_a_terminal_shows_it():
    from cowork_assets.curation.terminal import normalised

    frame = pl.DataFrame(
        {
            "trajectory_id": ["t"] * 5,
            "message_index": [0, 1, 2, 3, 4],
            "role": ["tool", "tool", "tool", "assistant", "tool"],
            "content": [
                "\x1b[1;32mPASSED\x1b[0m 3 tests\r\nnext line",  # colours, a CRLF
                "Downloading 10%\r50%\r100%\nsaved\x07",  # progress overwritten in place, a bell
                "\x1b]0;title\x07$ ls\x1b[K",  # a window title (OSC) and a line erase
                "keeps \x07 its bell",  # not an observation: left for control_characters to report
                "plain text",
            ],
            "chars": [40, 40, 20, 18, 10],
        }
    )
    out = normalised(frame, ["trajectory_id", "message_index"])
    assert out["content"].to_list() == [
        "PASSED 3 tests\nnext line",
        "100%\nsaved\ufffd",
        "$ ls",
        "keeps \x07 its bell",
        "plain text",
    ]
    assert out["terminal_chars"].to_list() == [7 + 4 + 1, 20 + 1, 10 + 3, 0, 0]
    assert out["chars"].to_list() == [40 - 12, 40 - 20, 20 - 13, 18, 10]  # a replaced character still counts


def test_a_coding_run_with_terminal_output_is_curated_clean_and_not_flagged():
    from cowork_assets.validation.structure import find_structure_findings

    noisy = "\x1b[32m$ pytest\x1b[0m\r\ncollecting 0 items\rcollected 3 items\r\n3 passed\x1b[K"
    run = trajectory(
        [USER_LS, call("bash", {"command": "pytest"}), result(noisy), {"role": "assistant", "content": "Done."}]
    )
    f = flatten(run)
    found = find_structure_findings(
        "b", f["trajectories"], f["task_packages"], f["messages"], f["tool_calls"], "o200k_base"
    )
    assert found.height == 0  # the observation's control text is not a defect: curation normalises it
    curated = _curate(run)["curated_messages"].filter(pl.col("role") == "tool").row(0, named=True)
    assert curated["content"] == "$ pytest\ncollected 3 items\n3 passed"
    assert curated["terminal_chars"] == len(noisy) - len(curated["content"])


def test_each_category_has_its_own_budget():
    def run(tid, category, text_chars):
        t = trajectory(
            [
                USER_LS,
                call("bash", {"command": "cat big.py"}),
                result("x" * text_chars),
                {"role": "assistant", "content": "ok"},
            ],
            tid=tid,
        )
        t["task"]["category"] = category
        return t

    chat, coding = run("chat", "single_turn", 50_000), run("code", "swe_agent", 50_000)
    out = _curate(
        chat,
        coding,
        max_observation_chars=100_000,  # nothing truncated: the budget alone decides
        budget_policy="drop",
        category_char_budgets={"swe_agent": 60_000},
        category_token_budgets={"swe_agent": 20_000},
    )
    stats = {r["trajectory_id"]: r for r in out["sample_stats"].iter_rows(named=True)}
    assert stats["chat"]["verdict"] == "dropped" and stats["code"]["verdict"] == "kept"
    assert stats["chat"]["tokens_after"] is None  # no token budget for chat: not counted during curation
    assert 0 < stats["code"]["tokens_after"] <= 20_000
    tight = _curate(
        coding, max_observation_chars=100_000, budget_policy="drop", category_token_budgets={"swe_agent": 100}
    )
    assert tight["sample_stats"].row(0, named=True)["reason"].startswith("over budget: ")
    assert tight["sample_stats"]["verdict"].to_list() == ["dropped"]


def test_the_lines_an_edit_copied_are_lost_under_head_and_kept_by_evidence_aware():
    from tests.evidence.test_evidence import EDITED as old
    from tests.evidence.test_evidence import edit_run

    run = edit_run()
    for strategy, lost in (("head", True), ("evidence_aware", False)):
        out = _curate(run, truncation_strategy=strategy, max_observation_chars=1000)
        audit = out["evidence_audit"].filter(pl.col("source") == "edit").row(0, named=True)
        assert (audit["value"], audit["lost_to_truncation"]) == (old, lost), strategy
        assert audit["lost_under"] == ["head"]  # tail and middle keep the end of the view, evidence_aware its window
        kept = out["curated_messages"].filter(pl.col("message_index") == 2)["content"][0]
        assert ("    62\tdef total(items):\n    63\t    return sum(items)" in kept) is not lost
