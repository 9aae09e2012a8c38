"""The layering docs/architecture.md promises, checked on the source itself."""

import ast
import os
import re
import subprocess
import sys

from tests.conftest import ROOT


def _imports(package: str) -> dict[str, set[str]]:
    """Every module of a package and what it imports (at any depth of the file): modules, and for the library's
    `from` imports the names too (one may be a module)."""
    found = {}
    for path in (ROOT / package).rglob("*.py"):
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
                if node.module.split(".")[0] == "cowork_assets":  # `from cowork_assets.store import batch_state`
                    names |= {f"{node.module}.{alias.name}" for alias in node.names}
        found[str(path.relative_to(ROOT))] = names
    return found


def test_the_library_imports_neither_the_command_line_nor_the_orchestration_layer():
    offenders = {
        m: sorted(n for n in names if n.split(".")[0] in ("cowork_cli", "dagster_project"))
        for m, names in _imports("cowork_assets").items()
    }
    assert {m: n for m, n in offenders.items() if n} == {}


def test_no_private_dagster_import_but_the_runs_origin_a_check_target_and_the_sqlite_storages():
    private = {
        m: sorted(n for n in names if n.startswith("dagster._"))
        for package in ("cowork_assets", "cowork_cli", "dagster_project")
        for m, names in _imports(package).items()
    }
    assert {m: n for m, n in private.items() if n} == {
        # a check evaluation of one partition of a run over several names its materialization by this class only
        "cowork_assets/orchestration/batch_events.py": [
            "dagster._core.definitions.asset_checks.asset_check_evaluation"
        ],
        "cowork_cli/origin.py": [  # no public way to run a job in process with its code location's origin
            "dagster._core.execution.api",
            "dagster._core.remote_origin",
            "dagster._core.types.loadable_target_origin",
        ],
        # no public way to choose how Dagster's SQLite storages connect, nor where their migrations are
        "dagster_project/sqlite_storage.py": [
            "dagster._core.storage.event_log",
            "dagster._core.storage.event_log.sqlite.sqlite_event_log",
            "dagster._core.storage.runs",
            "dagster._core.storage.schedules",
            "dagster._core.storage.sql",
            "dagster._core.storage.sqlite",
        ],
    }


def test_importing_the_library_changes_nothing_in_the_process():
    """No collector thresholds, no allocator setting of its own (polars writes its default on import), no
    warnings filter."""
    from cowork_assets.runtime.tuning import JEMALLOC_CONF

    modules = sorted(
        str(p.relative_to(ROOT).with_suffix("")).replace("/", ".").removesuffix(".__init__")
        for p in (ROOT / "cowork_assets").rglob("*.py")
        if p.stem != "__main__"
        and p != ROOT / "cowork_assets" / "trainers" / "verl.py"  # needs verl: imported where verl runs
    )
    code = (
        "import gc, os, importlib, warnings\nbefore = gc.get_threshold()\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "ours = [f for f in warnings.filters if 'AssetCheckSpec' in str(f[1])]  # numpy's own are numpy's\n"
        "print(before == gc.get_threshold() and not ours, os.environ.get('_RJEM_MALLOC_CONF'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    unchanged, allocator = out.stdout.split()
    assert unchanged == "True" and JEMALLOC_CONF not in allocator and len(modules) > 90


def test_the_architecture_layout_names_every_module():
    layout = (ROOT / "docs" / "architecture.md").read_text().split("## Layout", 1)[1]
    missing = [
        str(p.relative_to(ROOT))
        for package in ("cowork_assets", "cowork_cli", "dagster_project")
        for p in (ROOT / package).rglob("*.py")
        if p.stem not in ("__init__", "_base", "_common") and p.name not in layout and p.stem not in layout
    ]
    assert missing == []


def test_every_test_the_docs_name_exists_at_its_path():
    import re

    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    text = "\n".join(doc.read_text() for doc in docs)
    named = re.findall(r"`(tests/[\w/]+\.py)(?:::(test_\w+))?", text)
    missing = [
        f"{path}::{test}" if test else path
        for path, test in named
        if not (ROOT / path).is_file() or (test and f"def {test}(" not in (ROOT / path).read_text())
    ]
    bare = re.findall(r"(?<![/\w])test_\w+\.py", text)  # a module named without its folder cannot be found
    assert len(named) > 20 and missing == [] and bare == []


def test_the_recount_of_raw_records_shares_no_code_with_ingest():
    """records_accounted_for compares ingest with ingest/recount.py: only the standard library there."""
    imported = _imports("cowork_assets")["cowork_assets/ingest/recount.py"]
    standard = {"json", "zipfile", "zlib", "collections.abc", "contextlib", "pathlib", "shutil", "sqlite3", "tempfile"}
    assert imported == {"__future__", *standard}


def test_pure_modules_load_no_dagster():
    """Everything but the Dagster wiring (orchestration/ and each stage's assets.py) imports without Dagster: the
    settings are plain pydantic, the stages' logic plain functions."""
    pure = sorted(
        str(p.relative_to(ROOT).with_suffix("")).replace("/", ".").removesuffix(".__init__")
        for p in (ROOT / "cowork_assets").rglob("*.py")
        if p.stem not in ("assets", "__main__")
        and "orchestration" not in p.parts
        and p != ROOT / "cowork_assets" / "trainers" / "verl.py"  # needs verl: imported where verl runs
    )
    code = f"import importlib, sys\nfor m in {pure!r}: importlib.import_module(m)\nprint('dagster' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False" and len(pure) > 80


def test_each_published_dataset_is_one_description_and_one_function_and_no_code_branches_on_its_name():
    """datasets/schemas.py describes each published dataset once (its model, inputs, rows, exclusions, card inputs);
    its two registry tables derive from that, its candidate asset is its one row-building function
    (`candidate_rows`), its publish step and gate follow; no module compares a dataset's name to pick its behaviour."""
    from cowork_assets.datasets.assets import CANDIDATES, dataset_assets, dataset_checks
    from cowork_assets.datasets.schemas import PUBLISHED
    from cowork_assets.store.registry import TABLES, published

    assert {name: (d.candidate,) for name, d in PUBLISHED.items()} == {n: t.inputs for n, t in published().items()}
    assert all(
        TABLES[d.candidate].inputs == d.inputs and TABLES[d.candidate].model is d.model for d in PUBLISHED.values()
    )
    assert {d: a.key.to_user_string() for d, a in CANDIDATES.items()} == {n: d.candidate for n, d in PUBLISHED.items()}
    keys = sorted(k.to_user_string() for a in dataset_assets for k in a.keys)
    assert keys == sorted(["dataset_card", *PUBLISHED, *(d.candidate for d in PUBLISHED.values())])
    gates = sorted(k.to_user_string() for c in dataset_checks for k in c.check_keys)
    assert gates == sorted(f"{d.candidate}:quality_gate" for d in PUBLISHED.values())
    branch = re.compile(r"(dataset|name) [!=]= \"(" + "|".join(PUBLISHED) + ')"')
    offenders = [
        f"{p.relative_to(ROOT)}:{n}"
        for folder in ("cowork_assets", "cowork_cli", "dagster_project")
        for p in (ROOT / folder).rglob("*.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if branch.search(line)
    ]
    assert offenders == []


def test_no_import_cycle_among_the_librarys_modules():
    """Module-level imports of cowork_assets form no cycle (an import inside a function, made when it runs, is not
    one): each module can be understood, and imported, before the modules that use it."""
    from graphlib import TopologicalSorter

    modules = {
        str(p.relative_to(ROOT).with_suffix("")).replace("/", ".").removesuffix(".__init__"): p
        for p in (ROOT / "cowork_assets").rglob("*.py")
    }
    graph = {}
    for name, path in modules.items():
        imported = set()
        for node in ast.parse(path.read_text()).body:  # the module's own statements, not its functions'
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        graph[name] = {m for m in imported if m in modules and m != name}
    order = list(TopologicalSorter(graph).static_order())  # raises CycleError naming the cycle
    assert len(order) == len(modules) > 100


def test_the_readme_and_the_performance_reference_stay_short():
    """The README is the front door (release notes are CHANGELOG.md's); docs/performance.md is a reference of what
    `make bench` measures and one run's figures, not a log of runs."""
    lines = {name: len((ROOT / name).read_text().splitlines()) for name in ("README.md", "docs/performance.md")}
    assert lines["README.md"] <= 160 and lines["docs/performance.md"] <= 200, lines


def test_packages_import_only_their_own_layer_and_those_below():
    """docs/architecture.md's layers, bottom first: every import between the library's packages (and top-level
    modules), at any depth of a file, goes down that list; every package is in it. No exceptions."""
    block = (ROOT / "docs" / "architecture.md").read_text().split("```layers\n", 1)[1].split("```", 1)[0]
    order = [name for line in block.splitlines() for name in line.split()[1:]]
    rank = {name: i for i, name in enumerate(order)}
    packages = {p.stem if p.is_file() else p.name for p in (ROOT / "cowork_assets").iterdir() if _is_code(p)}
    assert sorted(rank) == sorted(packages) and len(order) == len(rank)

    upward = []
    for module, names in _imports("cowork_assets").items():
        here = _package(module.removeprefix("cowork_assets/").removesuffix(".py").replace("/", "."))
        if here == "__init__":  # the library's own package: a docstring
            continue
        for name in names:
            if name.startswith("cowork_assets.") and (there := _package(name.removeprefix("cowork_assets."))) != here:
                if rank[there] > rank[here]:
                    upward.append(f"{module} -> {name}")
    assert upward == []


def _is_code(path) -> bool:
    return (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()


def _package(dotted: str) -> str:
    return dotted.split(".")[0]


def test_batch_state_is_reached_only_through_the_verdict_module():
    """The runner, the sensors, the batch steps, the publish steps and `drop` ask orchestration/verdict.py whether a
    batch is processed and whether the corpus may be published; only it reads the store's batch state."""
    readers = {
        m
        for package in ("cowork_assets", "cowork_cli", "dagster_project", "bench")
        for m, names in _imports(package).items()
        if "cowork_assets.store.batch_state" in names
    }
    assert {m for m in readers if not m.startswith("cowork_assets/store/")} == {
        "cowork_assets/orchestration/verdict.py"
    }
