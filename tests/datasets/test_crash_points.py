"""A publication killed at each of its steps leaves the previous version or the new one whole, never a mix,
and the next run finishes it. The process dies with `os._exit` (no cleanup, as under SIGKILL) at:
writing the card into the candidate; right after the version folder was renamed into place; after the
`current` link switched but before `CURRENT` did; with `CURRENT`'s new content written but not renamed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from cowork_assets.datasets import publish as pub
from cowork_assets.runtime import scratch
from cowork_assets.store import versions
from tests.conftest import ROOT

SCHEMA = {"rows": pa.schema([pa.field("sample_id", pa.string()), pa.field("chars", pa.int64())])}

CRASH = {
    "writing the card": """
import os
written = pub.write_text_atomic
pub.write_text_atomic = lambda f, t: os._exit(137) if str(f).endswith("card.md") else written(f, t)
publish = lambda: pub.publish(root, "demo", lambda version, previous: {"card.json": "{}", "card.md": "# demo"})
""",
    "after the version rename": """
import os
moved = pub.move_folder
pub.move_folder = lambda a, b: (moved(a, b), os._exit(137))
publish = lambda: pub.publish(root, "demo")
""",
    "between the current link and CURRENT": """
import os
written = pub.write_text_atomic
pub.write_text_atomic = lambda f, t: os._exit(137) if str(f).endswith("CURRENT") else written(f, t)
publish = lambda: pub.publish(root, "demo")
""",
    "CURRENT written, not yet renamed": """
import os
from cowork_assets.store import storage
replace = os.replace
storage.os.replace = lambda a, b: os._exit(137) if str(b).endswith("CURRENT") else replace(a, b)
publish = lambda: pub.publish(root, "demo")
""",
}


def _stage(root: str, rows: int) -> None:
    frame = pl.DataFrame({"sample_id": [f"s{i}" for i in range(rows)], "chars": list(range(rows))})
    pub.mark_gated(pub.write_candidate(root, "demo", {"rows": frame}, SCHEMA))


def _whole(folder: Path) -> int:
    """Rows of a version folder, which must be complete: its Parquet file reads in full."""
    return pl.read_parquet(folder / "rows.parquet").height


@pytest.mark.parametrize("point", list(CRASH))
def test_a_publication_killed_at_any_step_leaves_a_whole_version_and_the_next_run_finishes_it(tmp_path, point):
    root = str(tmp_path / "data")
    _stage(root, 3)
    first = pub.publish(root, "demo").version
    _stage(root, 5)  # the next candidate, gated
    code = f"from cowork_assets.datasets import publish as pub\nroot = {root!r}\n{CRASH[point]}\npublish()\n"
    killed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert killed.returncode == 137, killed.stderr

    published = Path(root) / "published" / "demo"
    named = versions.current(root, "demo")
    assert named == first and _whole(published / named) == 3  # readers of CURRENT still see the old version
    assert _whole((published / "current").resolve()) in (3, 5)  # the link: the old or the new, whole

    scratch.sweep(Path(root))  # what the next run does first
    _stage(root, 5)  # the next run stages the same candidate again (same digest) and its gate passes
    again = pub.publish(root, "demo")
    assert again.version.startswith("v0002-") and _whole(published / again.version) == 5
    assert versions.current(root, "demo") == again.version and _whole((published / "current").resolve()) == 5
    assert sorted(p.name for p in published.iterdir() if p.name.startswith("v")) == [first, again.version]
    assert not list(Path(root).rglob(".*.tmp"))
