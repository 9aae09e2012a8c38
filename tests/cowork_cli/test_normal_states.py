"""States a user meets that are normal, not failures: nothing ready to read yet, files with modification times in the
future, a batch folder renamed after it was processed, a FORMAT file that holds something else than a number."""

from __future__ import annotations

import os
import time

import pytest

from cowork_assets.store import batch_state, root_format, storage
from cowork_assets.store.versions import DamagedState
from cowork_assets.synthetic.generate import generate


def _run(capsys, *args: str) -> tuple[int, str]:
    from cowork_cli.cli import main

    code = main(["run", *args])
    return code, capsys.readouterr().out


def test_no_batch_ready_is_nothing_to_do_not_a_failure(tmp_path, capsys):
    generate(tmp_path / "raw", trajectories=6, batches=2, seed=1)
    data, home = tmp_path / "curated", tmp_path / "home"
    args = ("--raw-root", str(tmp_path / "raw"), "--data-root", str(data), "--dagster-home", str(home))
    code, out = _run(capsys, *args, "--set", "batch_ready_marker=_SUCCESS")
    assert code == 0
    assert out.count("not read now: no _SUCCESS file in the folder yet") == 2  # one line per waiting batch
    assert "no batch is ready yet (2 waiting): nothing to do now" in out
    assert "FAILED" not in out and "Traceback" not in out and "refresh_corpus" not in out
    assert not (data / "published").exists()  # no corpus job ran
    for batch in ("2026-11-29-teacher-a",):
        (tmp_path / "raw" / batch / "_SUCCESS").touch()
    code, out = _run(capsys, *args, "--set", "batch_ready_marker=_SUCCESS")
    assert code == 0 and "published sft_dataset" in out and "waiting (not read yet, see above)" in out


def test_a_folder_with_future_modification_times_is_read_once_its_content_holds_still(tmp_path):
    generate(tmp_path / "raw", trajectories=4, batches=1, seed=1)
    batch = "2026-11-29-teacher-a"
    ahead = time.time() + 365 * 86400  # a host whose clock ran a year ahead, or an archive's times
    for path in (tmp_path / "raw" / batch).rglob("*"):
        os.utime(path, (ahead, ahead))
    os.utime(tmp_path / "raw" / batch, (ahead, ahead))
    why, settling = batch_state.not_ready(tmp_path / "raw", batch, 0.5, "")
    assert settling and why.startswith("its files' modification times are 3153")
    assert "in the future (a skewed clock or an unpacked archive)" in why and "\n" not in why
    time.sleep(0.6)
    assert batch_state.not_ready(tmp_path / "raw", batch, 0.5, "") is None  # unchanged for 0.5 s of this clock
    (tmp_path / "raw" / batch / "more.jsonl").write_text("{}\n")  # written to again: judged afresh
    os.utime(tmp_path / "raw" / batch / "more.jsonl", (ahead, ahead))
    assert batch_state.not_ready(tmp_path / "raw", batch, 0.5, "")[1]


@pytest.mark.parametrize("text", ["²", "2x", "", "-1", "٣"])
def test_a_format_file_that_is_not_a_number_is_named_in_one_line(tmp_path, text):
    storage.write_text_atomic(str(tmp_path / "state" / "FORMAT"), text)
    with pytest.raises(DamagedState, match="not a format number: the data root is damaged"):
        root_format.found_format(str(tmp_path))


def test_a_renamed_batch_folder_is_named_with_the_command_that_drops_it(tmp_path, capsys):
    generate(tmp_path / "raw", trajectories=6, batches=2, seed=1)
    data, home = tmp_path / "curated", tmp_path / "home"
    args = ("--raw-root", str(tmp_path / "raw"), "--data-root", str(data), "--dagster-home", str(home))
    assert _run(capsys, *args)[0] == 0
    (tmp_path / "raw" / "2026-11-29-teacher-b").rename(tmp_path / "raw" / "2026-11-30-teacher-b")
    code, out = _run(capsys, *args)
    assert code == 0
    assert (
        "batch 2026-11-29-teacher-b: processed, but its folder is no longer under the raw root (renamed or removed);"
        f" its runs are still in the datasets: `cowork-curate drop 2026-11-29-teacher-b --data-root {data}` takes it"
        " out"
    ) in " ".join(out.split())


def test_each_run_names_the_data_root_it_wrote_and_a_change_of_root_is_said(tmp_path, capsys):
    import dagster as dg

    generate(tmp_path / "raw", trajectories=4, batches=1, seed=1)
    home = tmp_path / "home"
    for data in ("first", "second"):
        code, out = _run(
            capsys,
            "--raw-root",
            str(tmp_path / "raw"),
            "--data-root",
            str(tmp_path / data),
            "--dagster-home",
            str(home),
        )
        assert code == 0
    assert (
        f"this instance's last run wrote the data root {tmp_path / 'first'}, this one writes {tmp_path / 'second'}"
        in " ".join(out.split())
    )
    instance = dg.DagsterInstance.from_config(str(home))
    roots = {r.dagster_run.tags.get("cowork/data_root") for r in instance.get_run_records()}
    assert roots == {str(tmp_path / "first"), str(tmp_path / "second")}  # every run names its own
    manifest = instance.get_latest_materialization_event(dg.AssetKey("batch_manifest"))
    assert manifest.asset_materialization.metadata["data_root"].value == str(tmp_path / "second")
