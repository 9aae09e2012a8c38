"""How check and asset metadata read in the UI: rates plotted batch after batch, counts as text, samples that
say how much they show, and the card's charts inline."""

import base64

import dagster as dg

from cowork_assets.datasets.card import inline_charts
from cowork_assets.markdown import table
from cowork_assets.orchestration.metadata import as_metadata


def test_a_batchs_rates_stay_numbers_and_its_counts_become_text():
    found = as_metadata({"agreement_rate": 0.97, "lost_share": 0.1, "max_duplicate_rate": 0.2, "rows": 300}, "b1")
    assert found["batch"] == "b1"
    assert (found["agreement_rate"], found["lost_share"]) == (0.97, 0.1)  # plotted per batch
    assert found["max_duplicate_rate"] == dg.MetadataValue.text("0.2")  # a setting: no series
    assert found["rows"] == dg.MetadataValue.text("300")
    assert as_metadata({"rows": 300})["rows"] == 300  # not per batch: a number


def test_an_examples_table_says_how_many_of_how_many_it_shows():
    assert table(["id"], [("a",), ("b",)], total=33).splitlines()[-1] == "2 of 33 shown"
    assert "shown" not in table(["id"], [("a",)])


def test_the_cards_charts_are_inline_for_the_ui_and_linked_in_card_md():
    card = "![lengths](lengths.svg)\n![sweep](sweep.svg)"
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"></svg>'
    inline = inline_charts(card, {"lengths.svg": svg})
    uri = inline.split("(", 1)[1].split(")", 1)[0]
    assert base64.b64decode(uri.removeprefix("data:image/svg+xml;base64,")).decode() == svg
    assert inline.endswith("(sweep.svg)")  # a chart it was not given stays as it was
    linked = inline_charts(card, {"sweep.svg": "sft_dataset/current/sweep.svg"}, as_link=True)
    assert linked.endswith("(sft_dataset/current/sweep.svg)")
