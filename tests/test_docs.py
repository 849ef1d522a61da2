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
    from harness.cli.entry import main

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    line = next(l for l in out.splitlines() if l.strip().startswith("process"))
    assert "envs_per_worker" in line and "one env per worker" not in line


# --- the repository explains itself -------------------------------------------------------------
#: A ticket number ("issue N", "issues N and M", "issue #N", "Issue N.M") means nothing to a
#: reader of this repository: say the reason in words (docs/design-notes.md collects the main ones).
_TICKET = re.compile(r"\b[Ii]ssues?\s+#?\d")
#: Files beside the checkout (the CI machine's shared folder, its reference notes) cannot be opened
#: by a reader of the repository: state the fact itself, cite upstream code by repo, commit, file.
_OUTSIDE = re.compile(r"\.\./shared\b|(?<![\w./])shared/(?:reference|seeds)/")
#: Where the CI machine's default data folder may be named (it is overridable by
#: EB_ALFRED_DATA_DIR): the fixture that reads it, the test of .ci/run's message, the CI page.
_DATA_DEFAULT = re.compile(r"\.\./shared(?:/data/eb_alfred)?(?![\w/])")
_DATA_DEFAULT_FILES = {"tests/conftest.py", "tests/test_data_requirement.py", "docs/ci.md"}
_CHECKED_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml"}


def _tracked_text_files() -> list[str]:
    """Files git tracks or would add (``git ls-files -co --exclude-standard``), or, outside a git
    checkout, every file but build output."""
    import subprocess

    try:
        out = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, check=True).stdout
        names = [n for n in out.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", "site", "node_modules", ".hypothesis", ".pytest_cache"}
        names = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*")
                 if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]
    return sorted(n for n in names if Path(n).suffix in _CHECKED_SUFFIXES and not n.startswith(".ci/"))


def _citations(name: str, text: str) -> list[str]:
    found = []
    for no, line in enumerate(text.splitlines(), 1):
        rest = _DATA_DEFAULT.sub("", line) if name in _DATA_DEFAULT_FILES else line
        if _TICKET.search(rest) or _OUTSIDE.search(rest):
            found.append(f"{name}:{no}: {line.strip()}")
    return found


def test_no_ticket_numbers_or_paths_outside_the_repository():
    """No tracked .py/.md/.yaml/.toml file outside .ci/ cites a ticket number or a path beside
    the checkout (CI's default data folder excepted where it is configured and documented)."""
    files = _tracked_text_files()
    assert "tests/test_docs.py" in files and "docs/design-notes.md" in files
    found = [hit for name in files if (ROOT / name).is_file()
             for hit in _citations(name, (ROOT / name).read_text(encoding="utf-8", errors="replace"))]
    assert found == [], "say the reason in words, not by ticket or outside path:\n" + "\n".join(found)


def test_the_citation_check_catches_what_it_should():
    # Built from parts, so this file does not cite what it shows.
    i, up = "issue", ".." + "/shared"
    bad = [f"# see {i} 24 §3", f"({i} 22 item 13)", f"{i.title()} 21.4: repro", f"{i}s 24 and 20",
           f"fixed in {i} #7", f"see {up}/reference/libero.md", f"(``{up[3:]}/reference/alfred.md``)",
           f"from {up}/seeds/x"]
    good = [f"{i} goal", "the put whitelist", f"https://github.com/o/r/{i}s", "OUTDIR/artifacts -> /shared/x",
            "EmbodiedBench envs/eb_manipulation/eb_man_utils.py (b247936)"]
    assert all(_citations("harness/x.py", line) for line in bad)
    assert not any(_citations("harness/x.py", line) for line in good)
    # the CI data default is allowed only in the files that configure or document it
    assert not _citations("tests/conftest.py", f"or place it at {up}/data/eb_alfred")
    assert _citations("tests/conftest.py", f"see {up}/reference/libero.md")
    assert _citations("harness/x.py", f"or place it at {up}/data/eb_alfred")


def test_install_page_lists_every_extra_and_each_of_its_packages():
    """docs/install.md's extras table: a row per extra of pyproject.toml, naming each package it installs."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    page = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(2).lower() for m in re.finditer(r"^\| `([\w-]+)` \| ([^|]*) \|", page, re.M)}
    assert not set(extras) - set(rows), f"docs/install.md's extras table lacks {sorted(set(extras) - set(rows))}"
    for extra, requirements in extras.items():
        for requirement in requirements:
            name = re.split(r"[<>=!~\[ ]", requirement, maxsplit=1)[0].lower()
            spelled = {name, name.replace("-", "_"), name.replace("_", "-")}
            assert any(re.search(rf"(?<![\w-]){re.escape(s)}(?![\w-])", rows[extra]) for s in spelled), \
                f"docs/install.md: the `{extra}` row omits {name}"
