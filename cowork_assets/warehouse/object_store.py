"""An object-store data root as DuckDB reads it: pyarrow's filesystem, as the fsspec one DuckDB routes `<scheme>://`
paths to (so no DuckDB extension has to be downloaded)."""

from __future__ import annotations

import duckdb
import pyarrow.fs as pafs
from fsspec.implementations.arrow import ArrowFSWrapper

from cowork_assets.store.storage import filesystem, is_remote


class ObjectStore(ArrowFSWrapper):
    """DuckDB lists a folder each time a statement expands a file name, and asks for a file's size and its time each
    time it opens it (two requests to the store, besides the one opening it makes). What a path is, and what a
    folder holds, once asked, is kept until `forget` (before each statement that should see files as they are
    then)."""

    def __init__(self, fs: pafs.FileSystem) -> None:
        super().__init__(fs)
        self._known: dict[str, pafs.FileInfo] = {}
        self._listed: dict[str, list[dict]] = {}

    def forget(self) -> None:
        self._known.clear()
        self._listed.clear()

    def ls(self, path, detail=False, **kwargs):
        folder = self._strip_protocol(path)
        if (entries := self._listed.get(folder)) is None:
            entries = self._listed[folder] = super().ls(path, detail=True, **kwargs)
        return [dict(e) for e in entries] if detail else [e["name"] for e in entries]

    def _file_info(self, path: str) -> pafs.FileInfo:
        path = self._strip_protocol(path)
        if (known := self._known.get(path)) is None:
            known = self._known[path] = self.fs.get_file_info(path)
        return known

    def info(self, path, **kwargs):
        return self._make_entry(self._file_info(path))

    def modified(self, path):
        return self._file_info(path).mtime


def object_store(con: duckdb.DuckDBPyConnection, data_root: str) -> ObjectStore | None:
    """Let `con` read an object-store data root (None for a local one): its `ObjectStore`, registered."""
    if not is_remote(data_root):
        return None
    scheme = data_root.split("://", 1)[0]
    # fsspec would keep every instance for the process's life: each connection's own, with what it was told
    store = type(f"{scheme.title()}Store", (ObjectStore,), {"protocol": scheme})(
        filesystem(data_root)[0], skip_instance_cache=True
    )
    con.register_filesystem(store)
    return store
