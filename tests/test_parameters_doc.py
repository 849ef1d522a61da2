"""docs/parameters.md is the generator's output for the current declarations."""

from __future__ import annotations

from harness.registry import docs_gen
from tests.conftest import REPO_ROOT


def test_parameters_page_is_up_to_date():
    committed = (REPO_ROOT / "docs" / "parameters.md").read_text(encoding="utf-8")
    assert committed == docs_gen.page(), (
        "docs/parameters.md is out of date: regenerate it with python -m harness.registry.docs_gen > docs/parameters.md")


def test_every_own_plugin_has_a_section_and_third_party_ones_stay_out():
    from harness.registry.catalog import PLANNERS, POLICIES, SUITES

    page = docs_gen.page()
    for plugin in [*SUITES.entries(), *PLANNERS.entries(), *POLICIES.entries()]:
        owner = getattr(plugin, "suite", None)
        heading = f"### {owner}: {plugin.name}" if owner else f"### {plugin.name}"
        assert (heading in page) == docs_gen._is_own(plugin), heading
