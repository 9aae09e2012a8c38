"""`--set NAME=VALUE` maps onto the typed settings, with clear errors."""

import pytest

from cowork_assets.orchestration.resources import CurateSettings
from cowork_assets.settings import SettingsError, parse_overrides


def test_values_are_typed():
    assert parse_overrides(["read_chunk_records=50", "token_encoding=cl100k_base"]) == {
        "read_chunk_records": 50,
        "token_encoding": "cl100k_base",
    }


@pytest.mark.parametrize(
    "pair, message",
    [
        ("nope=1", "unknown setting 'nope'"),
        ("read_chunk_records", "NAME=VALUE"),
        ("read_chunk_records=many", "bad value for read_chunk_records"),
        ("read_chunk_records=0", "greater than or equal to 1"),
    ],
)
def test_errors_say_what_is_wrong(pair, message):
    with pytest.raises(SettingsError, match=message):
        parse_overrides([pair])


def test_every_setting_has_a_default_and_a_description():
    for name, field in CurateSettings.model_fields.items():
        assert field.description, name
        assert not field.is_required(), name


def test_data_root_may_be_a_folder_a_file_uri_or_an_object_store(monkeypatch, tmp_path):
    from cowork_assets.orchestration.resources import CurateSettings

    monkeypatch.setenv("COWORK_WORK_DIR", str(tmp_path / "work"))
    remote = CurateSettings(data_root="s3://bucket/team/curated/")
    assert remote.root == "s3://bucket/team/curated"
    assert remote.local_root == tmp_path / "work" / "s3_bucket_team_curated"  # DuckDB file and locks
    assert remote.warehouse_path == remote.local_root / "cowork.duckdb"
    local = CurateSettings(data_root=f"file://{tmp_path}/curated/")
    assert local.root == str(tmp_path / "curated") and local.local_root == tmp_path / "curated"


@pytest.mark.parametrize(
    "pair, message",
    [
        ("token_encoding=gpt2", "bad value for token_encoding: Input should be 'o200k_base' or 'cl100k_base'"),
        ("refresh_cron=bogus", "bad value for refresh_cron: 'bogus' is not a cron string Dagster accepts"),
        ("refresh_cron=61 * * * *", "bad value for refresh_cron: '61 \\* \\* \\* \\*' is not a cron string"),
        ("max_concurrent=0", "bad value for max_concurrent: Input should be greater than or equal to 1"),
        ("near_dup_threshold=2", "bad value for near_dup_threshold: Input should be less than or equal to 1"),
        ("budget_policy=cut", "bad value for budget_policy: Input should be 'drop' or 'trim'"),
        # upper bounds: a typo of a few zeros is refused, not run (100,000 tokenizer helpers exhausted the machine)
        ("tokenizer_processes=100000", "bad value for tokenizer_processes: Input should be less than or equal to 64"),
        ("max_concurrent=65", "bad value for max_concurrent: Input should be less than or equal to 64"),
        ("read_chunk_records=99999999", "bad value for read_chunk_records: Input should be less than or equal to"),
        ("char_budget=18446744073709551617", "bad value for char_budget: Input should be less than or equal to"),
        (
            "max_observation_chars=" + "9" * 12,
            "bad value for max_observation_chars: Input should be less than or equal",
        ),
        ("token_budget=99999999999", "bad value for token_budget: Input should be less than or equal to 10000000"),
        ("max_per_task=10000000", "bad value for max_per_task: Input should be less than or equal to 1000000"),
        ('category_char_budgets={"swe_agent": 0}', "bad value for category_char_budgets: budgets must be from 1"),
        # the warehouse file is a plain name inside the data root, never a path
        (
            "warehouse_file=published/sft_dataset/CURRENT",
            "bad value for warehouse_file: 'published/sft_dataset/CURRENT'",
        ),
        ("warehouse_file=/abs/evil.duckdb", "bad value for warehouse_file: '/abs/evil.duckdb' is not a plain file"),
        ("warehouse_file=../escape.duckdb", "bad value for warehouse_file: '../escape.duckdb' is not a plain file"),
    ],
)
def test_bad_values_are_refused_before_any_work(pair, message, tmp_path, capsys):
    from cowork_cli.cli import main

    with pytest.raises(SettingsError, match=message):
        parse_overrides([pair])
    (tmp_path / "raw" / "b").mkdir(parents=True)
    assert (
        main(
            [
                "run",
                "--raw-root",
                str(tmp_path / "raw"),
                "--data-root",
                str(tmp_path / "out"),
                "--dagster-home",
                str(tmp_path / "home"),
                "--set",
                pair,
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and pair.split("=")[0] in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "home").exists()


@pytest.mark.parametrize(
    "raw, data, home, message",
    [
        ("", "out", "home", "--raw-root is empty (it would mean the current folder)"),
        ("/", "out", "home", "--raw-root / is the filesystem root"),
        ("raw", "raw", "home", "overlap: the outputs would be read as raw batches"),
        ("raw", "raw/out", "home", "overlap: the outputs would be read as raw batches"),
        ("raw/b", "raw", "home", "overlap: the outputs would be read as raw batches"),
        ("raw", "a_file", "home", "exists and is not a folder"),
        ("raw", "ftp://host/x", "home", "ftp:// is not an object store this reads"),
        ("raw", "out", "a_file", "--dagster-home"),
        ("raw", "/proc/1/out", "home", "is not a folder this process can write in"),
    ],
)
def test_bad_roots_are_refused_with_one_line_before_any_work(raw, data, home, message, tmp_path, capsys, monkeypatch):
    from cowork_cli.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "raw" / "b").mkdir(parents=True)
    (tmp_path / "a_file").write_text("x")
    assert main(["run", "--raw-root", raw, "--data-root", data, "--dagster-home", home]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert (
        not (tmp_path / "out").exists() and not (tmp_path / "home").exists() and not (tmp_path / "raw" / "out").exists()
    )


def test_the_bundled_encodings_are_the_allowed_ones():
    from typing import get_args

    from cowork_assets.tokens import BUNDLED

    assert set(get_args(CurateSettings.model_fields["token_encoding"].annotation)) == set(BUNDLED)


def test_definitions_load_with_a_bad_cron_in_the_environment_and_say_so():
    import os
    import subprocess
    import sys

    code = (
        "from dagster_project.definitions import defs\n"
        "s = defs.get_schedule_def('daily_refresh')\n"
        "print(s.cron_schedule)\nprint(s.description.split(';')[0])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COWORK_REFRESH_CRON": "bogus"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "0 3 * * *",
        "COWORK_REFRESH_CRON was refused: 'bogus' is not a cron string Dagster accepts: five fields "
        "(minute hour day month weekday), e.g. '0 3 * * *', or @hourly / @daily / @weekly / @monthly",
    ]


@pytest.mark.parametrize("command", ["generate", "run", "sql", "export", "trace"])
def test_every_subcommand_has_working_help(command, capsys):
    from cowork_cli.cli import main

    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0 and f"usage: cowork-curate {command}" in capsys.readouterr().out
