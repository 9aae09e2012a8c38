"""Where a dataset's versions are: its staged candidate under `<data_root>/candidates/<dataset>/<digest>/` (named
by the file `CANDIDATE` beside it) and its published versions under `<data_root>/published/<dataset>/`, the current
one named by `CURRENT` (datasets/publish.py writes them)."""

from __future__ import annotations

from cowork_assets.store.storage import exists, join, list_names, read_text

CANDIDATES, PUBLISHED = "candidates", "published"


def candidates_folder(data_root: str, dataset: str) -> str:
    return join(data_root, CANDIDATES, dataset)


def published_folder(data_root: str, dataset: str) -> str:
    return join(data_root, PUBLISHED, dataset)


def candidate(data_root: str, dataset: str) -> str:
    """The folder of the dataset's staged candidate."""
    pointer = join(candidates_folder(data_root, dataset), "CANDIDATE")
    if not exists(pointer):
        raise FileNotFoundError(f"no staged candidate for {dataset}")
    return join(candidates_folder(data_root, dataset), read_text(pointer).strip())


def current(data_root: str, dataset: str) -> str | None:
    """The name of the dataset's current version (None: never published)."""
    pointer = join(published_folder(data_root, dataset), "CURRENT")
    return read_text(pointer).strip() if exists(pointer) else None


def current_path(data_root: str, dataset: str) -> str:
    """The folder of the dataset's current version."""
    version = current(data_root, dataset)
    if version is None:
        raise FileNotFoundError(f"{dataset} has not been published under {data_root}")
    return join(published_folder(data_root, dataset), version)


def parquet_files(folder: str) -> list[str]:
    return [join(folder, name) for name in list_names(folder) if name.endswith(".parquet")]
