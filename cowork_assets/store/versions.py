"""Where a dataset's versions are: its candidate under `<data_root>/candidates/<dataset>/<digest>/` (named
by the file `CANDIDATE` beside it) and its published versions under `<data_root>/published/<dataset>/`, the current
one named by `CURRENT` (datasets/publish.py writes them)."""

from __future__ import annotations

import re

from cowork_assets.store.storage import exists, join, list_names, read_text

CANDIDATES, PUBLISHED = "candidates", "published"
VERSION = re.compile(r"v\d{4,}-[0-9a-f]{8,64}")  # how publish.py names a version


class DamagedState(ValueError):
    """A pointer of the data root that names what is not there (a damaged or hand-edited `CURRENT`)."""


def candidates_folder(data_root: str, dataset: str) -> str:
    return join(data_root, CANDIDATES, dataset)


def published_folder(data_root: str, dataset: str) -> str:
    return join(data_root, PUBLISHED, dataset)


def candidate(data_root: str, dataset: str) -> str:
    """The folder of the dataset's candidate."""
    pointer = join(candidates_folder(data_root, dataset), "CANDIDATE")
    if not exists(pointer):
        raise FileNotFoundError(f"no candidate for {dataset}")
    return join(candidates_folder(data_root, dataset), read_text(pointer).strip())


def current(data_root: str, dataset: str, strict: bool = True) -> str | None:
    """The name of the dataset's current version (None: never published). `CURRENT` is a version's name, never a
    path: a name that is not one of the dataset's versions is damage (`DamagedState`; None when not `strict`)."""
    root = published_folder(data_root, dataset)
    pointer = join(root, "CURRENT")
    if not exists(pointer):
        return None
    try:
        name = read_text(pointer).strip()
    except UnicodeDecodeError:
        name = "(not text)"
    if VERSION.fullmatch(name) and name in list_names(root, directories=True):
        return name
    if not strict:
        return None
    raise DamagedState(
        f"{pointer} names {name[:80]!r}, which is not a published version of {dataset}: "
        "run `cowork-curate run --force` to publish it again"
    )


def current_path(data_root: str, dataset: str) -> str:
    """The folder of the dataset's current version."""
    version = current(data_root, dataset)
    if version is None:
        raise FileNotFoundError(f"{dataset} has not been published under {data_root}")
    return join(published_folder(data_root, dataset), version)


def parquet_files(folder: str) -> list[str]:
    return [join(folder, name) for name in list_names(folder) if name.endswith(".parquet")]
