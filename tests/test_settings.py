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


def test_data_root_may_be_a_folder_a_file_uri_or_an_object_store(monkeypatch, tmp_path):
    from cowork_assets.settings import CurateSettings

    monkeypatch.setenv("COWORK_WORK_DIR", str(tmp_path / "work"))
    remote = CurateSettings(data_root="s3://bucket/team/curated/")
    assert remote.root == "s3://bucket/team/curated"
    assert remote.local_root == tmp_path / "work" / "s3_bucket_team_curated"  # DuckDB file and locks
    assert remote.warehouse_path == remote.local_root / "cowork.duckdb"
    local = CurateSettings(data_root=f"file://{tmp_path}/curated/")
    assert local.root == str(tmp_path / "curated") and local.local_root == tmp_path / "curated"
