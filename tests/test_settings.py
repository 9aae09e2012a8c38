"""`--set NAME=VALUE` maps onto the typed settings, with clear errors."""

import pytest

from cowork_assets.settings import CurateSettings, SettingsError, parse_overrides


def test_values_are_typed():
    assert parse_overrides(["read_chunk_records=50", "token_encoding=cl100k_base"]) == {
        "read_chunk_records": 50, "token_encoding": "cl100k_base"}


@pytest.mark.parametrize("pair, message", [
    ("nope=1", "unknown setting 'nope'"),
    ("read_chunk_records", "NAME=VALUE"),
    ("read_chunk_records=many", "bad value for read_chunk_records"),
    ("read_chunk_records=0", "greater than or equal to 1"),
])
def test_errors_say_what_is_wrong(pair, message):
    with pytest.raises(SettingsError, match=message):
        parse_overrides([pair])


def test_every_setting_has_a_default_and_a_description():
    for name, field in CurateSettings.model_fields.items():
        assert field.description, name
        assert not field.is_required(), name
