"""The README and the docs stay true: short, every extra named, no dangling references,
examples that need a ``base`` variant say so, ``harness list`` describes the executors as they are.

The site itself is built with ``mkdocs build --strict`` in CI (.ci/run): a broken link, a
missing anchor or a page outside the nav fails there.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _nav_pages() -> set[str]:
    """Pages named in mkdocs.yml's nav (``- Title: page.md``)."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    return set(re.findall(r":\s*([\w./-]+\.md)\s*$", text, flags=re.M))


def test_readme_is_short():
    assert len(README.splitlines()) <= 200


def test_readme_names_every_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    missing = [e for e in extras if f"`{e}`" not in README]
    assert missing == []


def test_every_docs_page_is_in_the_nav_and_every_readme_link_is_a_page():
    nav = _nav_pages()
    on_disk = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert on_disk <= nav, f"pages outside mkdocs.yml's nav: {sorted(on_disk - nav)}"
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)(?:#[\w-]+)?\)", README))
    assert linked and linked <= nav, sorted(linked - nav)


def test_no_dangling_file_references():
    """Markdown files named in the Dockerfiles, pyproject and CI exist (or are docs pages)."""
    nav = {f"docs/{p}" for p in _nav_pages()}
    sources = [ROOT / "pyproject.toml", ROOT / ".ci" / "run", *(ROOT / "docker").glob("Dockerfile*")]
    for src in sources:
        for ref in re.findall(r"[\w./-]+\.md\b", src.read_text(encoding="utf-8")):
            assert (ROOT / ref).exists() or ref in nav, f"{src.name} names {ref}, which does not exist"


def test_readme_examples_that_need_a_base_variant_say_so():
    """``--baseline base`` only works on a store holding a variant named ``base``."""
    for line in README.splitlines():
        if "--baseline base" in line:
            assert "variant=base" in line or "variant named base" in line, line


def test_readme_figures_are_backed_by_benchmarks():
    """A timing in the README (seconds / minutes) must appear on the benchmarks page."""
    bench = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    for figure in re.findall(r"\b(\d+(?:\.\d+)?)\s?(?:s|min)\b", README):
        assert figure in bench, f"README quotes {figure} s/min, which docs/benchmarks.md does not back"


def test_harness_list_describes_envs_per_worker(capsys):
    from harness.cli import main

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    line = next(l for l in out.splitlines() if l.strip().startswith("process"))
    assert "envs_per_worker" in line and "one env per worker" not in line
