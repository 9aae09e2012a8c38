"""The stages' declarations, and the plugin families.

The pipeline's stages (`STAGES`, in pipeline order) each declare what the layers below them collect: their tables
(`schemas.TABLES`, collected by the table registry). `stage_modules(name)` imports that module of every stage.

Plugin families: input formats (ingest/formats/), grader check types (check_types/) and truncation strategies
(truncation/strategies/). A family is a package; each of its modules whose name does not start with `_` is one
plugin, found by importing them in name order, so a new plugin is one new module and nothing else. Each family
states what a plugin module provides as a small `typing.Protocol`; a module that lacks a part of it is an error
that names the part, never a plugin silently left out."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def members(protocol: type) -> list[str]:
    """The names a protocol requires: its annotated attributes and its functions."""
    names = [n for n in getattr(protocol, "__annotations__", {}) if not n.startswith("_")]
    names += [n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_")]
    return names


def discover(package: str | ModuleType, protocol: type) -> dict[str, ModuleType]:
    """Module name -> module of every plugin of a family, in name order, each checked against `protocol`."""
    package = importlib.import_module(package) if isinstance(package, str) else package
    found = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        if missing := [name for name in members(protocol) if not hasattr(module, name)]:
            raise TypeError(f"{module.__name__} is a {protocol.__name__} plugin but defines no {', '.join(missing)}")
        found[info.name] = module
    return found


STAGES = ("ingest", "evidence", "curation", "validation", "selection", "datasets")


def stage_modules(name: str) -> list[ModuleType]:
    """The module `name` (e.g. `schemas`) of every stage, in pipeline order."""
    return [importlib.import_module(f"cowork_assets.{stage}.{name}") for stage in STAGES]
