"""The generated reference (docs/tables.md, docs/settings.md) is what the code would write now."""

from __future__ import annotations

from cowork_cli import docs


def test_the_generated_docs_are_current():
    stale = [path.name for path, text in docs.generated().items() if path.read_text() != text]
    assert stale == [], f"run `.venv/bin/python -m cowork_cli.docs` to regenerate {stale}"


def test_every_table_and_setting_is_in_the_generated_docs():
    from cowork_assets.orchestration.resources import CurateSettings
    from cowork_assets.store.registry import REGISTRY

    tables, settings = docs.tables_md(), docs.settings_md()
    assert [t.name for t in REGISTRY if f"## {t.name}\n" not in tables] == []
    assert [name for name in CurateSettings.model_fields if f"| `{name}` |" not in settings] == []
