"""Property-based tests: readers never raise and always balance; truncation respects its bound and
writes well-formed markers; curating curated data changes nothing."""

import gzip
import re

import orjson
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cowork_assets.curation import truncate
from cowork_assets.curation.curate import curate_chunk
from cowork_assets.evidence.build import build_evidence
from cowork_assets.ingest.batch import ingest_batch
from cowork_assets.settings import CurationSettings
from cowork_assets.store.raw_files import iter_raw_lines
from cowork_assets.truncation.spans import MARKER_RE, SPAN, evidence_spans, merge, render, total
from tests.helpers import call, flatten, result, trajectory

SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

VALID = orjson.dumps(trajectory([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
lines = st.one_of(
    st.just(VALID),
    st.binary(max_size=200),
    st.builds(lambda cut: VALID[:cut], st.integers(0, len(VALID))),
    st.builds(
        lambda i, b: VALID[:i] + bytes([b]) + VALID[i + 1 :], st.integers(0, len(VALID) - 1), st.integers(0, 255)
    ),
    st.sampled_from([b"", b"   ", b"\xef\xbb\xbf" + VALID, b"[]", b"null", b'"\\ud800"', b"{" * 3000]),
)


@SLOW
@given(st.lists(lines, max_size=12), st.sampled_from([b"\n", b"\r\n"]), st.booleans(), st.integers(0, 100))
def test_reading_never_raises_and_every_record_is_accounted_for(tmp_path_factory, records, sep, gz, cut_percent):
    root = tmp_path_factory.mktemp("prop")
    (root / "raw" / "b").mkdir(parents=True)
    data = sep.join(records)
    if gz:
        data = gzip.compress(data, mtime=0)
        data = data[: max(1, len(data) * cut_percent // 100)] if cut_percent < 100 else data
    (root / "raw" / "b" / ("a.jsonl.gz" if gz else "a.jsonl")).write_bytes(data)
    list(iter_raw_lines(root / "raw" / "b" / ("a.jsonl.gz" if gz else "a.jsonl")))
    report = ingest_batch(root / "raw", "b", root / "out", chunk_records=3)
    assert report.balanced and report.parsed + report.quarantined == report.raw_records


spans_input = st.integers(1, 5000).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.integers(1, 1500),
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(1, 40)).map(lambda c: (c[0], min(n, c[0] + c[1]))), max_size=6
        ),
        st.integers(0, 100),
    )
)


@settings(max_examples=300, deadline=None)
@given(spans_input)
def test_truncation_stays_within_its_bound_and_keeps_every_evidence_span(args):
    length, allowance, cores, context = args
    spans, overflow = evidence_spans(length, allowance, cores, context)
    assert spans == merge(spans) and all(0 <= s < e <= length for s, e in spans)
    assert all(any(s <= a and b <= e for s, e in spans) for a, b in cores)  # evidence kept
    if overflow:
        assert spans == merge(cores) and overflow == total(spans) - allowance
    else:
        assert total(spans) == min(allowance, length)


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=400), st.data())
def test_markers_are_well_formed_and_account_for_every_cut_character(text, data):
    cuts = data.draw(st.lists(st.tuples(st.integers(0, len(text)), st.integers(0, len(text))), max_size=5))
    spans = merge((min(a, b), max(a, b)) for a, b in cuts)
    rendered = render(text, spans)
    cut = sum(int(n) for n in MARKER_RE.findall(rendered))
    assert cut == len(text) - total(spans)
    assert MARKER_RE.sub("", rendered) == "".join(text[s:e] for s, e in spans)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=300), min_size=1, max_size=4), st.data())
def test_the_columnar_cut_renders_as_spans_render_and_counts_what_it_saves_without_rendering(texts, data):
    spans = []
    for text in texts:
        cuts = data.draw(st.lists(st.tuples(st.integers(0, len(text)), st.integers(0, len(text))), min_size=1))
        spans.append(merge((min(a, b), max(a, b)) for a, b in cuts) or [(0, 0)])
    cut = pl.DataFrame(
        {
            "content": texts,
            "length": [len(t) for t in texts],
            "kept_spans": [[{"start": s, "end": e} for s, e in row] for row in spans],
        },
        schema={"content": pl.String, "length": pl.Int64, "kept_spans": pl.List(SPAN)},
    )
    rendered = truncate.render(cut).to_list()
    assert rendered == [render(t, row) for t, row in zip(texts, spans)]
    assert truncate.saved_chars(cut).to_list() == [len(t) - len(r) for t, r in zip(texts, rendered)]


def _sample(positions: list[int], length: int) -> dict:
    body = list("x" * length)
    messages = [{"role": "user", "content": "go"}, call("lookup", {"q": "all"}, "c0")]
    for i, p in enumerate(sorted(set(positions))):
        token = f" id_{i:04d} "
        body[p : p + len(token)] = token
    messages.append(result("".join(body)[:length], "c0"))
    for i in range(len(set(positions))):
        messages += [call("send", {"id": f"id_{i:04d}"}, f"s{i}"), result("ok", f"s{i}")]
    messages.append({"role": "assistant", "content": "done"})
    return trajectory(messages)


def _curate(frames, params):
    ev, _ = build_evidence(
        "b", frames["trajectories"], frames["task_packages"], frames["tool_calls"], frames["messages"]
    )
    return curate_chunk("b", frames["trajectories"], frames["messages"], ev, params)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(0, 5900), min_size=0, max_size=5),
    st.integers(1200, 6000),
    st.sampled_from(["head", "evidence_aware"]),
    st.sampled_from([2000, 40000]),
)
def test_curating_curated_data_changes_nothing(positions, length, strategy, budget):
    frames = flatten(_sample([p for p in positions if p < length - 12], length))
    params = CurationSettings(truncation_strategy=strategy, char_budget=budget)
    once = _curate(frames, params)
    again_input = dict(frames, messages=once["curated_messages"].select(frames["messages"].columns))
    twice = _curate(again_input, params)
    first, second = once["curated_messages"], twice["curated_messages"]
    assert first["content"].to_list() == second["content"].to_list()
    assert not second["truncated"].any() and not second["trimmed"].any()
    tool = first.filter(pl.col("role") == "tool")
    assert (tool["kept_chars"] <= 1000 + tool["overflow_chars"]).all()


def _occurrences(norm: str, text: str) -> list[tuple[int, int]]:
    """The definition of a match, by brute force (no code of the evidence stage): left to right, not
    overlapping; characters compared case-insensitively as Python's `re` compares one character; a value
    that starts (ends) with a letter or digit is not preceded (followed) by one of [0-9a-z] (ignoring
    case); a number may have a grouping comma before any of its digits but the first, never next to its
    point."""
    number = re.fullmatch(r"[+-]?[0-9]*\.?[0-9]+", norm) is not None

    def same(c: str, n: str) -> bool:
        return re.fullmatch(re.escape(n), c, re.IGNORECASE) is not None

    def alnum(c: str) -> bool:
        return re.fullmatch("[0-9a-z]", c, re.IGNORECASE) is not None

    def end_of(i: int, k: int) -> int | None:  # where norm[k:] ends when matched from text[i], commas first
        if k == len(norm):
            return i
        comma = number and 0 < k and "." not in (norm[k], norm[k - 1]) and text[i : i + 1] == ","
        for j in ([i + 1] if comma else []) + [i]:
            if j < len(text) and same(text[j], norm[k]) and (end := end_of(j + 1, k + 1)) is not None:
                return end
        return None

    found, i = [], 0
    while i < len(text):
        end = end_of(i, 0)
        if (
            end is not None
            and not (norm[:1].isalnum() and i > 0 and alnum(text[i - 1]))
            and not (norm[-1:].isalnum() and end < len(text) and alnum(text[end]))
        ):
            found.append((i, end - i))
            i = end
        else:
            i += 1
    return found


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet="ab1-_ .,AB#@ßİKΣς", max_size=40), st.text(alphabet="ab1-_ .,AB#@ßİKΣς", min_size=1, max_size=5)
)
def test_value_matching_finds_what_the_definition_finds(text, value):
    from cowork_assets.values import matches, normalise

    norm = normalise(value)
    if norm:
        expected = _occurrences(norm, text)
        assert list(matches(norm, text)) == expected
        if text.isascii():  # the evidence stage hands over ASCII text lower-cased by polars
            assert list(matches(norm, text.lower(), text.lower())) == expected


@settings(max_examples=600, deadline=None)
@given(
    st.text(alphabet="0123456789,.+- aK", max_size=40),
    st.from_regex(r"[+-]?[0-9]{1,2}(,?[0-9]{1,3}){0,2}(\.[0-9]{1,2})?", fullmatch=True),
)
def test_number_matching_finds_what_the_definition_finds(text, value):
    """Numbers match with or without grouping commas (never around the point), found without a regex."""
    from cowork_assets.values import matches, normalise

    norm = normalise(value)
    assert list(matches(norm, text)) == _occurrences(norm, text)


@given(
    st.integers(1, 3000).flatmap(
        lambda n: st.tuples(
            st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, 80)), max_size=6), st.integers(0, 200)
        )
    )
)
def test_widened_total_counts_the_characters_within_context_of_a_core(args):
    from cowork_assets.truncation.spans import _widened_total, merge

    n, raw, context = args
    cores = merge((s, min(n, s + w)) for s, w in raw)
    covered = {i for s, e in cores for i in range(max(0, s - context), min(n, e + context))}  # by brute force
    assert _widened_total(cores, context, n) == len(covered)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(alphabet=" \t\n\r\x0b\x0c\x1c\x85\xa0\u2003\u3000ab", max_size=30), min_size=1, max_size=20))
def test_collapsing_only_the_whitespace_runs_that_change_equals_collapsing_every_run(texts):
    from cowork_assets.selection.signatures import WHITESPACE_RUNS

    s = pl.Series(texts)
    assert s.str.replace_all(WHITESPACE_RUNS, " ").to_list() == s.str.replace_all(r"\s+", " ").to_list()
