"""Evidence: what counts, how it is matched, and where it is located."""

import random

import polars as pl
import pytest

from cowork_assets.evidence.build import build_evidence
from cowork_assets.evidence.extract import package_items
from cowork_assets.store.registry import TABLES
from cowork_assets.values import find, named_value, normalise, record_value
from tests.helpers import call, flatten, result, trajectory


@pytest.mark.parametrize(
    "value, named, record",
    [
        (1, None, None),
        ("1", None, None),
        ("10", None, None),
        (4, None, None),  # quantities, counts
        (True, None, None),
        (None, None, None),
        ("", None, None),
        ("no", None, None),
        ("economy", "economy", None),
        ("approved", "approved", None),  # a choice, not a record
        ("polyester", "polyester", None),  # a grader keyword counts; the same word as an argument does not
        ("250", "250", None),
        ("1,234.50", "1,234.50", "1,234.50"),
        (1093.34, "1093.34", "1093.34"),
        ("#W6390527", "#W6390527", "#W6390527"),
        ("2024-05-21", "2024-05-21", "2024-05-21"),
        ("ana.lopez@northwind.example", "ana.lopez@northwind.example", "ana.lopez@northwind.example"),
        ("Draft the budget table", "Draft the budget table", "Draft the budget table"),
    ],
)
def test_what_counts_as_evidence(value, named, record):
    assert named_value(value) == named
    assert record_value(value) == record


def test_enum_choices_of_the_tool_schema_do_not_count():
    assert record_value("HAT-2024") == "HAT-2024"
    assert record_value("HAT-2024", frozenset({"hat-2024"})) is None


@pytest.mark.parametrize(
    "text, value, expected",
    [
        ("total $1,234.50 due", "1234.50", (7, 8)),
        ("total 1234.50 due", "1,234.50", (6, 7)),
        ("ids c_12345 and c_1234.", "c_1234", (16, 6)),  # not inside the longer id
        ("ORDER #W6390527", "#w6390527", (6, 9)),  # case-folded
        ("item 17453605304", "7453605304", None),  # a longer number is a different value
        ("nothing here", "c_1", None),
    ],
)
def test_matching_is_normalised_and_boundary_aware(text, value, expected):
    assert find(text, normalise(value)) == expected


def test_items_from_every_check_type_and_unknown_types_are_reported():
    checks = [
        {"id": "sent", "type": "tool_called", "tool": "send", "args": {"to": {"id": "c_42001", "flag": True}, "n": 1}},
        {"id": "kw", "type": "keywords_present", "keywords": ["Q3-report-final", "ok"], "evidence": ["TRK-99812"]},
        {"id": "state", "type": "state_equals", "path": "x.status", "value": ["approved", "exp_55512"]},
        {"id": "none", "type": "tool_not_called", "tool": "delete"},
        {"id": "todos", "type": "distinct_items", "tool": "todos_create", "key": "title", "expected": 2},
        {"id": "odd", "type": "vibes_match", "vibe": "good"},
    ]
    import orjson

    items, specs, unknown = package_items(orjson.dumps(checks).decode(), "[]")
    got = {(i["check_id"], i["source"], i["value"]) for i in items}
    assert got == {
        ("sent", "derived", "c_42001"),
        ("kw", "derived", "Q3-report-final"),
        ("kw", "explicit", "TRK-99812"),
        ("state", "derived", "exp_55512"),
    }
    assert [(s["check_id"], s["tool"], s["key"]) for s in specs] == [("todos", "todos_create", "title")]
    assert unknown == {"vibes_match": 1}


def _evidence(traj) -> pl.DataFrame:
    f = flatten(traj)
    return build_evidence("b", f["trajectories"], f["task_packages"], f["tool_calls"], f["messages"])[0]


def test_location_and_status_of_each_kind_of_item():
    listing = '[{"id": "c_11111", "name": "Ana Lopez"}, {"id": "c_22222", "name": "Ana Berg", "amount": "1234.50"}]'
    traj = trajectory(
        [
            {"role": "system", "content": "You help. Reference REF-7781 if asked."},
            {"role": "user", "content": "Text Ana Berg; ticket TCK-5521."},
            call("contacts_search", {"query": "Ana"}, "c1"),
            result(listing, "c1"),
            call("send", {"contact_id": "c_22222", "ticket": "TCK-5521", "ref": "REF-7781", "code": "NEW-9001"}, "c2"),
            result('{"ok": true, "echo": "c_22222"}', "c2"),
            {"role": "assistant", "content": "Sent. The amount was $1,234.50."},
        ],
        checks=[
            {"id": "sent", "type": "tool_called", "tool": "send", "args": {"contact_id": "c_22222"}},
            {"id": "amount", "type": "keywords_present", "keywords": ["1,234.50"]},
            {"id": "never", "type": "keywords_present", "keywords": ["UNUSED-4242"]},
        ],
    )
    ev = _evidence(traj)
    rows = {(r["check_id"], r["value"]): r for r in ev.iter_rows(named=True)}
    assert set(rows) == {
        ("sent", "c_22222"),
        ("amount", "1,234.50"),
        ("never", "UNUSED-4242"),
        ("grounding", "TCK-5521"),
        ("grounding", "REF-7781"),
        ("grounding", "NEW-9001"),
    }
    sent = rows[("sent", "c_22222")]
    assert (sent["status"], sent["found_at"], sent["found_offset"], sent["used_at"]) == (
        "at_risk",
        3,
        listing.index("c_22222"),
        4,
    )
    assert sent["found_message_chars"] == len(listing) and sent["found_role"] == "tool"
    amount = rows[("amount", "1,234.50")]
    assert (amount["status"], amount["found_at"], amount["found_offset"], amount["used_at"]) == (
        "at_risk",
        3,
        listing.index("1234.50"),
        6,
    )
    assert (
        rows[("grounding", "TCK-5521")]["status"] == "given" and rows[("grounding", "TCK-5521")]["found_role"] == "user"
    )
    assert rows[("grounding", "REF-7781")]["found_role"] == "system"
    assert rows[("grounding", "NEW-9001")]["status"] == "produced"
    assert rows[("never", "UNUSED-4242")]["status"] == "unused"


def test_a_value_seen_only_after_its_use_was_produced():
    traj = trajectory(
        [
            {"role": "user", "content": "go"},
            call("create", {"name": "job-20931"}, "c1"),
            result('{"id": "job-20931"}', "c1"),
            {"role": "assistant", "content": "done"},
        ]
    )
    ev = _evidence(traj)
    assert ev.select("value", "status", "used_at", "found_at").rows() == [("job-20931", "produced", 1, None)]


def test_distinct_items_key_values_come_from_the_runs_calls():
    traj = trajectory(
        [
            {"role": "user", "content": "Add: Draft the budget table; Review speaker notes"},
            call("todos_create", {"title": "Draft the budget table"}, "c1"),
            result("{}", "c1"),
            call("todos_create", {"title": "Review speaker notes"}, "c2"),
            result("{}", "c2"),
            {"role": "assistant", "content": "Added."},
        ],
        checks=[{"id": "todos", "type": "distinct_items", "tool": "todos_create", "key": "title", "expected": 2}],
    )
    ev = _evidence(traj)
    assert sorted(ev.select("check_id", "value", "status").rows()) == [
        ("todos", "Draft the budget table", "given"),
        ("todos", "Review speaker notes", "given"),
    ]


def test_synthetic_at_risk_items_equal_the_generator_labels(default_raw, pipeline):
    """Independent ground truth: every needed value the generator placed in an observation, and nothing else."""
    import json

    settings, _, _ = pipeline
    ev = TABLES["evidence"].scan(settings.root).collect().filter(pl.col("status") == "at_risk")
    got = {
        (t, n): (f, o)
        for t, n, f, o in ev.select("trajectory_id", "norm", "found_at", "found_offset").unique().iter_rows()
    }
    labels = [json.loads(l) for l in (default_raw / "needed_values.jsonl").read_text().splitlines()]
    expected = {
        (l["trajectory_id"], normalise(l["value"])): (l["found_at"], l["offset"]) for l in labels if l["role"] == "tool"
    }
    assert got == expected and len(expected) > 400


def test_location_search_edge_cases():
    """The search rejects messages by each value's longest alphanumeric run; what it must still find."""
    from cowork_assets.evidence.locate import locate

    listing = "ref X91234Y; Kunde Müller, Auftrag ÄBCD-XYZW; total 1,234,567 units; tier €€€"
    traj = trajectory(
        [
            {"role": "user", "content": "go"},
            call("lookup", {"q": "x"}, "c1"),
            result(listing, "c1"),
            result("later: AB-1234 and 1,234,567 again", "c1"),
            {"role": "assistant", "content": "AB-1234, äbcd-xyzw, 1234567, €€€"},
            result("after the use: 1,234,567", "c1"),
        ]
    )
    messages = flatten(traj)["messages"]
    tid = messages["trajectory_id"][0]
    norms = ["ab-1234", "äbcd-xyzw", "1234567", "€€€", "zz-0000"]
    items = pl.DataFrame({"trajectory_id": [tid] * len(norms), "norm": norms})
    got = {r["norm"]: r for r in locate(items, messages).iter_rows(named=True)}
    later = "later: AB-1234 and 1,234,567 again"
    # "1234" occurs inside X91234Y, not as a whole run: the first sighting is the later message.
    assert (got["ab-1234"]["found_at"], got["ab-1234"]["found_offset"], got["ab-1234"]["used_at"]) == (3, 7, 4)
    # Non-ASCII text, looked for in its lower-cased form: offsets in the original text.
    assert (got["äbcd-xyzw"]["found_at"], got["äbcd-xyzw"]["found_offset"], got["äbcd-xyzw"]["found_length"]) == (
        2,
        listing.index("ÄBCD-XYZW"),
        9,
    )
    # Grouping commas: both sightings before the use, none after it.
    assert [(s["message_index"], s["offset"], s["length"]) for s in got["1234567"]["shown_at"]] == [
        (2, listing.index("1,234,567"), 9),
        (3, later.index("1,234,567"), 9),
    ]
    # No alphanumeric run at all: plain containment.
    assert (got["€€€"]["found_at"], got["€€€"]["found_offset"], got["€€€"]["used_at"]) == (2, listing.index("€€€"), 4)
    assert (got["zz-0000"]["found_at"], got["zz-0000"]["used_at"]) == (None, None)


def test_a_non_ascii_message_with_many_values_is_lowered_once(monkeypatch):
    """Values are looked for in a message's lower-cased text; a non-ASCII text (polars lowers only ASCII ones) is
    lowered once for all its values, not once per value (1,000 ids in a 1.7 MB listing took 9.8 s), and each id is
    found where it is."""
    from cowork_assets.evidence import locate

    listing = "".join(f"商品{i:03d} 名称：保温杯第{i}号 编号 R-{i:06d}\n" for i in range(300))
    steps = [{"role": "user", "content": "查询"}, call("list", {}, "c0"), result(listing, "c0")]
    ids = [f"R-{i:06d}" for i in range(0, 300, 10)]
    steps += [call("get", {"ids": ids}, "c1")]
    messages = flatten(trajectory(steps))["messages"]
    lowered_given, real = [], locate.matches
    monkeypatch.setattr(
        locate, "matches", lambda n, t, low, memo: (t == listing and lowered_given.append(low)) or real(n, t, low, memo)
    )
    items = pl.DataFrame({"trajectory_id": [messages["trajectory_id"][0]] * len(ids), "norm": [i.lower() for i in ids]})
    got = locate.locate(items, messages)
    assert len(lowered_given) == len(ids) and lowered_given[0] == listing.lower()
    assert len({id(low) for low in lowered_given}) == 1  # one lower-cased copy for every value
    assert got.sort("norm").select("found_at", "found_offset", "used_at").rows() == [
        (2, listing.index(i), 3) for i in ids
    ]


def test_numbers_used_in_a_compact_json_list_are_found_used():
    """A call's arguments written compactly (`{"ids":[7000000,7000013]}`) hold each number as a run of its own;
    removing digit grouping (`1,234,567`) glues them into one. Each number is still found used there, as `matches`
    finds it, and still found in a grouped listing before."""
    from cowork_assets.evidence.locate import locate

    traj = trajectory(
        [
            {"role": "user", "content": "go"},
            call("list", {}, "c0"),
            result("orders 7,000,000 and 7000013", "c0"),
            call("fetch", {"ids": [7000000, 7000013], "page": 1}, "c1"),
        ]
    )
    messages = flatten(traj)["messages"]
    assert '"ids":[7000000,7000013]' in messages["tool_calls"][3][0]["arguments"]
    items = pl.DataFrame({"trajectory_id": [messages["trajectory_id"][0]] * 2, "norm": ["7000000", "7000013"]})
    got = {
        r["norm"]: (r["found_at"], r["found_offset"], r["used_at"])
        for r in locate(items, messages).iter_rows(named=True)
    }
    assert got == {"7000000": (2, 7, 3), "7000013": (2, 21, 3)}


def test_a_message_with_many_numbers_has_its_grouping_commas_removed_once(monkeypatch):
    """A number is looked for in its message's text without grouping commas: the text is made so once per message,
    not once per number (one message of 20,000 calls, a number in each, took its evidence 27 s), and each number's
    sighting and use are where they are."""
    from cowork_assets import values
    from cowork_assets.evidence.locate import locate

    made, real = [], values._without_grouping
    monkeypatch.setattr(values, "_without_grouping", lambda text: made.append(text) or real(text))
    numbers = [f"{7_000_000 + 13 * i}" for i in range(40)]
    listing = ", ".join(f"{int(n):,}" for n in numbers)  # the numbers as a tool shows them: grouped
    asked = {"role": "assistant", "content": "fetching " + ", ".join(numbers)}
    traj = trajectory([{"role": "user", "content": "go"}, call("list", {}, "c0"), result(listing, "c0"), asked])
    messages = flatten(traj)["messages"]
    items = pl.DataFrame({"trajectory_id": [messages["trajectory_id"][0]] * len(numbers), "norm": numbers})
    got = {r["norm"]: r for r in locate(items, messages).iter_rows(named=True)}
    assert len(made) == 2  # the listing and the assistant's message, each once
    for n in numbers:
        grouped = f"{int(n):,}"
        assert (got[n]["found_at"], got[n]["found_offset"], got[n]["found_length"], got[n]["used_at"]) == (
            2,
            listing.index(grouped),
            len(grouped),
            3,
        )


def test_location_in_slices_of_pairs_finds_what_one_pass_finds(pipeline, monkeypatch):
    """Messages are paired with their trajectory's values a slice at a time (a hostile trajectory makes
    hundreds of millions of pairs); the slices must not change what is found, nor its order."""
    from cowork_assets.evidence import locate

    settings, _, _ = pipeline
    messages = TABLES["messages"].scan(settings.root).collect()
    keys = TABLES["evidence"].scan(settings.root).collect().select("trajectory_id", "norm").unique()
    whole = locate.scan(keys, messages)
    monkeypatch.setattr(locate, "PAIRS_AT_ONCE", 7)
    sliced = locate.scan(keys, messages)
    assert whole[0].height > 100 and whole[1].height > 100
    assert whole[0].equals(sliced[0]) and whole[1].equals(sliced[1])


def test_a_large_trajectory_searched_with_one_automaton_finds_what_the_pairs_find(pipeline, monkeypatch):
    """Trajectories past LARGE_TRAJECTORY (message, value) pairs seek all their anchors in each message at once, so
    their work grows with messages plus values: on every trajectory of the default data (and the edge cases), it
    finds exactly what pairing each message with each value finds."""
    from cowork_assets.evidence import locate

    settings, _, _ = pipeline
    messages = TABLES["messages"].scan(settings.root).collect()
    keys = TABLES["evidence"].scan(settings.root).collect().select("trajectory_id", "norm").unique()
    paired = locate.scan(keys, messages)
    monkeypatch.setattr(locate, "LARGE_TRAJECTORY", 0)
    at_once = locate.scan(keys, messages)
    assert paired[0].height > 100 and paired[1].height > 100
    assert paired[0].equals(at_once[0]) and paired[1].equals(at_once[1])
    test_location_search_edge_cases()


def test_a_large_trajectory_is_searched_whole_with_one_automaton_however_its_pairs_are_sliced(pipeline, monkeypatch):
    """A large trajectory is kept whole in one slice of the pairs: its anchors' automaton is built once (built once per
    slice of it, a trajectory of 20,000 messages and 19,000 values took its work to grow with messages times values
    squared), and what is found is what the unsliced pass finds."""
    from cowork_assets.evidence import locate

    settings, _, _ = pipeline
    messages = TABLES["messages"].scan(settings.root).collect()
    keys = TABLES["evidence"].scan(settings.root).collect().select("trajectory_id", "norm").unique()
    monkeypatch.setattr(locate, "LARGE_TRAJECTORY", 0)  # every trajectory large
    whole = locate.scan(keys, messages)
    searched, at_once = [], locate._searched_at_once
    monkeypatch.setattr(locate, "_searched_at_once", lambda s, a, tid: searched.append(tid) or at_once(s, a, tid))
    monkeypatch.setattr(locate, "PAIRS_AT_ONCE", 7)
    sliced = locate.scan(keys, messages)
    assert sorted(searched) == sorted(keys["trajectory_id"].unique().to_list())  # each once
    assert whole[0].height > 100 and whole[0].equals(sliced[0]) and whole[1].equals(sliced[1])


def _scanned_pair_by_pair(keys: pl.DataFrame, messages: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """What `scan` must find, decided the plain way: each message in conversation order, each value of its
    trajectory not used yet whose anchor it contains, matched by `matches`."""
    from cowork_assets.evidence import locate
    from cowork_assets.values import matches

    anchors = dict(keys.select("norm", anchor=locate._anchor(pl.col("norm"))).unique().iter_rows())
    values: dict[str, list[str]] = {}
    for tid, norm in keys.unique().sort("norm").iter_rows():
        values.setdefault(tid, []).append(norm)
    uses: dict[tuple[str, str], int] = {}
    shown = []
    for tid, index, role, text, lowered, ntext in locate._texts(keys, messages).iter_rows():
        normalised = text if ntext is None else ntext
        for norm in values.get(tid, []):
            anchor = anchors[norm]
            if (tid, norm) in uses or (anchor or norm) not in normalised:
                continue
            if anchor is not None and not locate.anchored_in(text, lowered, ntext, anchor, {}):
                continue
            found = list(matches(norm, text, text if lowered else None))
            if role == "assistant" and found:
                uses[(tid, norm)] = index
            elif role != "assistant":
                shown += [(tid, norm, index, role, start, length, len(text)) for start, length in found]
    used = pl.DataFrame(
        [(t, n, i) for (t, n), i in uses.items()],
        orient="row",
        schema={"trajectory_id": pl.String, "norm": pl.String, "used_at": pl.Int32},
    ).sort("trajectory_id", "norm")
    return used, pl.DataFrame(shown, schema=locate.OCCURRENCE_SCHEMA, orient="row").sort(
        "trajectory_id", "norm", "message_index", "offset"
    )


def test_the_engine_finds_what_matching_each_message_in_turn_finds():
    """Most (message, value) pairs are decided by polars (a value found once, or an assistant's first sighting with
    its boundaries); the rest by `matches`. On random texts made to trip them (overlapping sightings, sightings
    inside longer runs, grouping commas, upper case, non-ASCII letters), every use and sighting is what deciding
    each pair with `matches` gives."""
    from cowork_assets.evidence import locate

    rng = random.Random(11)
    fillers = [" ", " ", "; ", "x", "q", "7", ".", "-", ","]
    foreign = ["é", "É", "ß"]  # in a few texts: those are searched by `matches`
    pieces = ["a-a", "ab", "AB", "1,234", "1234", "12", "34", "1,2", "a-12,345", "12,34 1234"]
    norms = ["a-a", "ab", "a-12", "1234", "1,234", "12,3", "x-ab", "é-ab", "-a", "1.2", "ab ab"]
    frames, keys = [], []
    for t in range(60):
        tid = f"t{t}"
        said = [
            {
                "role": rng.choice(["assistant", "tool", "user"]),
                "content": "".join(rng.choice(pieces) if rng.random() < 0.3 else rng.choice(fillers) for _ in range(12))
                + (rng.choice(foreign) if rng.random() < 0.2 else ""),
            }
            for _ in range(8)
        ]
        frames.append(flatten(trajectory([{"role": "user", "content": "go"}, *said], tid=tid))["messages"])
        keys += [(tid, normalise(n)) for n in rng.sample(norms, 6)]
    messages = pl.concat(frames)
    keys = pl.DataFrame(keys, orient="row", schema={"trajectory_id": pl.String, "norm": pl.String})
    used, shown = locate.scan(keys, messages)
    expected_used, expected_shown = _scanned_pair_by_pair(keys, messages)
    assert used.height > 30 and shown.height > 50
    assert used.equals(expected_used)
    assert shown.equals(expected_shown)


def test_matching_one_long_trajectory_makes_frames_in_proportion_to_its_messages_plus_values(monkeypatch):
    """3x the messages and 3x the values of one trajectory make about 3x the rows in every frame the search joins,
    not 9x (pairing each message with each value made 9 million rows at 3,000 of each), and every value is found."""
    from cowork_assets.evidence import locate

    heights = []
    join = pl.DataFrame.join
    monkeypatch.setattr(
        pl.DataFrame, "join", lambda self, *a, **k: heights.append(len(out := join(self, *a, **k))) or out
    )
    largest = {}
    for n in (1000, 3000):
        said = [{"role": "tool", "content": f"order ord-{i:05d} shipped"} for i in range(n)]
        messages = flatten(trajectory([{"role": "user", "content": "go"}, *said]))["messages"]
        keys = pl.DataFrame({"trajectory_id": "t1", "norm": [f"ord-{i:05d}" for i in range(n)]})
        heights.clear()
        _, occurrences = locate.scan(keys, messages)
        assert occurrences.height == n and occurrences["message_index"].to_list() == list(range(1, n + 1))
        largest[n] = max(heights)
    assert largest[3000] <= 4 * largest[1000] and largest[3000] < 3000 * 3000 / 100


# --- code edits ----------------------------------------------------------------------------------------

VIEW = "Here's the result of running `cat -n` on app.py:\n" + "".join(
    f"{n:6}\t{line}\n"
    for n, line in enumerate(
        ["import os", *(f"x_{i} = {i}" for i in range(60)), "def total(items):", "    return sum(items)", "end = 1"],
        start=1,
    )
)


@pytest.mark.parametrize(
    "command, patterns",
    [
        ("sed -i 's/def division(a: float, b: float) -> float/X/' t.py", ["def division(a: float, b: float) -> float"]),
        ('sed -i -e "s|a\\/b\\.c|d|g" f && cat f', ["a/b.c"]),  # any delimiter, escapes undone
        ("sed -i '317s/^    return x$/y/' f.py", ["    return x"]),  # a line address; anchors dropped
        ("grep -n sed f.py", []),
    ],
)
def test_sed_substitution_patterns_are_read_unescaped(command, patterns):
    from cowork_assets.evidence.edits import sed_patterns

    assert sed_patterns(command) == patterns


EDITED = "def total(items):\n    return sum(items)"  # two lines, 1,073 characters into VIEW


def edit_run(*more: dict) -> dict:
    """A coding run that views app.py with `cat -n` and replaces EDITED, then does `more`."""
    replace = {"command": "str_replace", "path": "app.py", "old_str": EDITED, "new_str": "x"}
    return trajectory(
        [
            {"role": "user", "content": "Fix total in app.py."},
            call("bash", {"command": "cat -n app.py"}, "c1"),
            result(VIEW, "c1"),
            call("str_replace_editor", replace, "c2"),
            result("edited", "c2"),
            *more,
            {"role": "assistant", "content": "Fixed."},
        ]
    )


def test_an_edit_is_located_through_the_line_numbers_of_the_view_it_copied():
    old = EDITED  # never verbatim in a numbered view
    run = edit_run(call("bash", {"command": "sed -i 's/x_59 = 59/x_59 = 0/' app.py"}, "c3"), result("", "c3"))
    f = flatten(run)
    evidence, _ = build_evidence("b", f["trajectories"], f["task_packages"], f["tool_calls"], f["messages"])
    edits = {r["value"]: r for r in evidence.filter(pl.col("source") == "edit").iter_rows(named=True)}
    assert sorted(edits) == [old, "x_59 = 59"]
    start = VIEW.index("def total(items):")
    end = VIEW.index("sum(items)") + len("sum(items)")
    assert edits[old] | {} == {
        **edits[old],
        "used_at": 3,
        "found_at": 2,
        "status": "at_risk",
        "found_offset": start,
        "found_length": end - start,  # the prefix of the second line inside the span
    }
    assert edits["x_59 = 59"]["found_offset"] == VIEW.index("x_59 = 59") and edits["x_59 = 59"]["used_at"] == 5


def test_line_numbers_of_views_and_edits_are_items_found_where_a_view_prints_them():
    from cowork_assets.evidence.edits import _found, _searches

    assert _searches("str_replace_editor", '{"command": "view", "path": "a.py", "view_range": [150, -1]}') == [
        ("150", "line 150")  # -1 (to the end) and numbers under 100 are in every view: not items
    ]
    assert _searches("bash", '{"command": "open src/f.py 1474"}') == [("1474", "line 1474")]
    assert _searches("bash", '{"command": "edit 1475:1476\\nreturn x\\nend_of_edit"}') == [
        ("1475", "line 1475"),
        ("1476", "line 1476"),
    ]
    assert _searches("str_replace_editor", '{"command": "view", "path": "a.py", "view_range": [1, 40]}') == []
    cat_n = "   149\tdef f():\n   150\t    return 1\n"
    grep_n = "src/a.py:150:    return 1\n"
    window = "[File: a.py]\n150:    return 1\n151:\n"
    for text, at in ((cat_n, cat_n.index("   150\t")), (grep_n, grep_n.index(":150:")), (window, window.index("150:"))):
        assert [start for start, _ in _found("line 150", text)] == [at]
    assert _found("line 150", "it took 150 ms, 1500 lines") == []  # a number that is not a line's
