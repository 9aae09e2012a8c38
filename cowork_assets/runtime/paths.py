"""Locate the project's SQL and expectation files, in a source checkout or an installed wheel."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # cowork_assets/


def project_dir(name: str) -> Path:
    """`sql` or `expectations`: bundled in the wheel, or beside the package in a checkout."""
    for candidate in (_PACKAGE / "_bundled" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"cannot find the {name}/ folder of cowork-curate")
