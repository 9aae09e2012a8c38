"""Code versions from the source on disk, committed or not: the one meaning of "the code changed", shared by the
UI (each asset's Dagster code version, so "unsynced" means the code it runs changed) and the CLI's resume (a batch
is redone when the code of its per-batch assets changed).

An asset's version hashes its defining module and everything that imports of cowork_assets, transitively, with the
data files they read. A change outside that (docs, tests, the synthetic generator, another stage) changes nothing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import pkgutil
import re
from functools import cache
from pathlib import Path

from cowork_assets.plugins import STAGES
from cowork_assets.runtime.paths import project_dir

ROOT = Path(__file__).resolve().parents[2]  # the checkout (or site-packages): paths are hashed relative to it
# The modules that define the assets of a batch run (tests check this against the definitions).
BATCH_MODULES = (
    "cowork_assets.ingest.assets",
    "cowork_assets.evidence.assets",
    "cowork_assets.curation.assets",
    "cowork_assets.validation.assets",
    "cowork_assets.selection.assets",
    "cowork_assets.orchestration.assets",
)
STAGE_MODULES = re.compile(r"""stage_modules\(["'](\w+)["']\)""")
PROJECT_DIR = re.compile(r"""project_dir\(["'](\w+)["']\)""")

# `from cowork_assets.x import a, b` (parenthesised over lines, or not) and `import cowork_assets.x`, anywhere in
# a module (lazy imports in functions too). Every process that loads the code location computes this, so a
# regular expression reads them rather than a walk over every node of every module's syntax tree.
IMPORT = re.compile(
    r"""^[ \t]*(?:
        from[ \t]+(cowork_assets[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n\#]+)
        | import[ \t]+(cowork_assets[\w., \t]*)
    )""",
    re.MULTILINE | re.VERBOSE,
)


@cache
def _imported(name: str) -> tuple[Path, tuple[str, ...]] | None:
    """A module's source file and the cowork_assets modules (or names) it imports: its packages, a plugin
    family's every module, the stages' modules it collects (`stage_modules`), and what its `import` statements
    name. Parsed once per module."""
    try:
        spec = importlib.util.find_spec(name)
    except ModuleNotFoundError:  # `from module import name`: a name, not a module
        return None
    if spec is None or spec.origin is None:
        return None
    parts = name.split(".")
    names = [".".join(parts[:i]) for i in range(1, len(parts))]  # its packages
    source = Path(spec.origin).read_text()
    if spec.submodule_search_locations and "discover(" in source:  # a plugin family: every module of it
        names += [f"{name}.{m.name}" for m in pkgutil.iter_modules(spec.submodule_search_locations)]
    for collected in STAGE_MODULES.findall(source):  # what every stage declares, as the module collects it
        names += [f"cowork_assets.{stage}.{collected}" for stage in STAGES]
    for module, imported, plain in IMPORT.findall(source):
        if module:
            names += [module, *(f"{module}.{n.split()[0]}" for n in imported.strip("()").split(",") if n.strip())]
        else:
            names += [n.split()[0] for n in plain.split(",")]
    return Path(spec.origin), tuple(names)


@cache
def source_closure(module: str) -> tuple[Path, ...]:
    """The source files of a module and of every cowork_assets module it imports, transitively (packages'
    `__init__.py` included: importing a module runs them; a plugin family's modules all, as it imports them)."""
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name not in seen and (found := _imported(name)):
            seen[name], imports = found
            todo += imports
    return tuple(sorted(seen.values()))


@cache
def code_version(*modules: str) -> str:
    """A hash of the source the modules' assets run: each module, what it imports of cowork_assets, the data
    files beside them (templates, rank files, holdouts) and the project folders they read (expectations, sql)."""
    files = sorted({f for m in modules for path in source_closure(m) for f in (path, *_read_by(path))})
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + _file_digest(path))
    return digest.hexdigest()[:12]


@cache
def _file_digest(path: Path) -> bytes:
    """A file's hash, read once per process: the assets' versions share most of their files."""
    return hashlib.sha256(path.read_bytes()).digest()


def batch_code_version() -> str:
    """The code version of a batch run: of every module that defines a per-batch asset."""
    return code_version(*BATCH_MODULES)


@cache
def _read_by(path: Path) -> tuple[Path, ...]:
    """The data files a module reads: those of its folder's data sub-folders (no `__init__.py`) for a package's
    `__init__.py`, and the project folders it names (`project_dir("sql")`)."""
    found = []
    if path.name == "__init__.py":
        data = [d for d in path.parent.iterdir() if d.is_dir() and not (d / "__init__.py").exists()]
        found += [f for d in data for f in d.rglob("*") if f.is_file() and "__pycache__" not in f.parts]
    for name in PROJECT_DIR.findall(path.read_text()):
        found += [f for f in project_dir(name).rglob("*") if f.is_file() and f.suffix != ".md"]
    return tuple(f for f in found if f.suffix != ".md")
