"""Scratch files hold trajectory text (tokenizer shares, gate views, parsed chunks), so they never go to a
shared /tmp: a run's process keeps them in `<local root>/.scratch/<pid>/`, removed when its run ends, and
every run first sweeps what killed processes left: their scratch folders, their half-written `.*.<pid>.*.tmp`
files beside outputs, and multiprocessing semaphores in /dev/shm that no process has open.
"""

from __future__ import annotations

import os
import shutil
from contextlib import suppress
from pathlib import Path

from cowork_assets.runtime.procfs import alive

SCRATCH = ".scratch"
SHM = Path("/dev/shm")
_folder: Path | None = None  # this process's scratch folder while a run uses it


def folder() -> str | None:
    """The folder for a scratch file now (None: no run set one, the system's temporary folder)."""
    if _folder is None:
        return None
    _folder.mkdir(parents=True, exist_ok=True)
    return str(_folder)


def use(local_root: Path) -> None:
    """Scratch files of this process go under `local_root` until `release`."""
    global _folder
    _folder = local_root / SCRATCH / str(os.getpid())


def release() -> None:
    """Remove this process's scratch folder; later scratch files go to the system's temporary folder."""
    global _folder
    if _folder is not None:
        shutil.rmtree(_folder, ignore_errors=True)
    _folder = None


def sweep(local_root: Path) -> int:
    """Remove what processes that are gone left under `local_root` and in /dev/shm; returns how many."""
    removed = 0
    if not local_root.is_dir():
        return 0
    # os.walk, not rglob: other runs create and remove folders (a batch's tables written aside) while this walks.
    for here, _, names in os.walk(local_root):
        for name in names:
            parts = name.split(".")
            if name.startswith(".") and len(parts) >= 4 and parts[-1] == "tmp" and parts[-3].isdigit():
                if not alive(int(parts[-3])):
                    (Path(here) / name).unlink(missing_ok=True)
                    removed += 1
    scratch = local_root / SCRATCH
    for path in scratch.iterdir() if scratch.is_dir() else []:
        if not (path.name.isdigit() and alive(int(path.name))):
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed + _sweep_semaphores()


def _sweep_semaphores() -> int:
    """Python's multiprocessing semaphores (`sem.mp-*`) of this user that no process maps: a process pool's
    resource tracker unlinks them, unless it was killed with the run. A mapping names the file glibc created
    it as, not the name it was linked to, so a semaphore is known in /proc/<pid>/maps by device and inode."""
    leaked = {}
    for path in SHM.glob("sem.mp-*") if SHM.is_dir() else []:
        with suppress(OSError):
            if (stat := path.stat()).st_uid == os.getuid():
                leaked[f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x} {stat.st_ino}".encode()] = path
    if not leaked:
        return 0
    for maps in Path("/proc").glob("[0-9]*/maps"):
        with suppress(OSError):  # gone meanwhile, or another user's
            for line in maps.read_bytes().splitlines():
                fields = line.split(maxsplit=5)
                if len(fields) > 4:
                    leaked.pop(fields[3] + b" " + fields[4], None)
    for path in leaked.values():
        path.unlink(missing_ok=True)
    return len(leaked)
