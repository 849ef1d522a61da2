"""Shared test fixtures.

Real benchmark data is read in place: ``$EB_ALFRED_DATA_DIR`` or
``../shared/data/eb_alfred`` beside the repository. Tests that need it skip
with the reason when it is absent (a user's clone has no ../shared), unless
``REQUIRE_EB_ALFRED_DATA=1`` is set (``.ci/run`` sets it): then they fail, so
CI can never go green with the data tests skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.video_qa_data import cfg_data, po_data  # noqa: F401 - the video-QA suites' generated data, for every test

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Set to 1 to turn a missing-data skip into a failure (CI).
REQUIRE_DATA_ENV = "REQUIRE_EB_ALFRED_DATA"


def eb_alfred_data_or_none() -> Path | None:
    env = os.environ.get("EB_ALFRED_DATA_DIR")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "data" / "eb_alfred"
    return path if (path / "splits" / "splits.json").is_file() else None


@pytest.fixture
def data_dir() -> Path:
    """The EB-ALFRED data folder (EmbodiedBench's ``data/``); skip without it, or
    fail when ``REQUIRE_EB_ALFRED_DATA=1``."""
    path = eb_alfred_data_or_none()
    if path is None:
        reason = ("EB-ALFRED data not found: set EB_ALFRED_DATA_DIR to EmbodiedBench's data folder "
                  "(splits/splits.json) or place it at ../shared/data/eb_alfred")
        if os.environ.get(REQUIRE_DATA_ENV) == "1":
            pytest.fail(f"{reason} ({REQUIRE_DATA_ENV}=1: the data tests must not be skipped)", pytrace=False)
        pytest.skip(reason)
    return path


# --- the default run across the cores -----------------------------------------------------
#: When set, the node ids of the tests that passed are appended to this file, one a line.
PASSED_LOG_ENV = "PYTEST_PASSED_LOG"
#: When set, the tests whose node ids this file lists (one a line) are deselected. .ci/run runs
#: the README's test command in the README's install, logging what passed, then only the rest
#: (what skipped for a missing extra) with every extra installed.
EXCEPT_ENV = "PYTEST_EXCEPT"


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (the default run: ``-n auto``), the ``serial`` tests skip, saying how
    to run them: they start clusters sized to the machine, which cannot share it with the other
    workers. ``python -m pytest -m serial -n 0`` runs them. With ``$PYTEST_EXCEPT``, the tests
    it lists are deselected."""
    listed = os.environ.get(EXCEPT_ENV)
    if listed:
        done = set(Path(listed).read_text(encoding="utf-8").splitlines())
        dropped = [item for item in items if item.nodeid in done]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item in items if item.nodeid not in done]
    if hasattr(config, "workerinput"):
        skip = pytest.mark.skip(reason="serial: cannot share the machine with the other test workers; "
                                       "run them alone with `python -m pytest -m serial -n 0`")
        for item in items:
            if item.get_closest_marker("serial") is not None:
                item.add_marker(skip)


# --- tests with branches that depend on an extra -------------------------------------------
#: When set, the node ids of the tests that passed with a branch skipped (``branches.skip``) are
#: appended here, one a line; they are not logged as passed (``$PYTEST_PASSED_LOG``), so .ci/run's
#: everything-installed pass runs them again.
PARTIAL_LOG_ENV = "PYTEST_PARTIAL_LOG"
#: Set to 1 to turn a skipped branch into a failure (.ci/run's everything-installed pass).
REQUIRE_BRANCHES_ENV = "REQUIRE_EVERY_BRANCH"
#: The ``user_properties`` key of a skipped branch (it travels with the report under xdist).
SKIPPED_BRANCH = "skipped_branch"


class Branches:
    """What a test that checks several things, some of which need an extra, left unchecked.

    ``branches.skip(what, why)`` where a test would otherwise pass over a branch silently (an
    agent whose extra is missing, a format whose library is not installed): the test still runs
    its other branches and passes, but it is not logged as passed, it is listed at the end of the
    run, and .ci/run reruns it with every extra, where (``REQUIRE_EVERY_BRANCH=1``) a skipped
    branch fails it."""

    def __init__(self, node: pytest.Item):
        self._node = node

    def skip(self, what: str, why: str) -> None:
        if os.environ.get(REQUIRE_BRANCHES_ENV) == "1":
            pytest.fail(f"{what}: {why} ({REQUIRE_BRANCHES_ENV}=1: no branch may be skipped)", pytrace=False)
        self._node.user_properties.append((SKIPPED_BRANCH, f"{what}: {why}"))

    @property
    def skipped(self) -> list[str]:
        return [v for k, v in self._node.user_properties if k == SKIPPED_BRANCH]


@pytest.fixture
def branches(request) -> Branches:
    return Branches(request.node)


def extra_installed(extra: str) -> bool:
    """Every distribution this project's ``extra`` names (pyproject.toml) is installed (its
    metadata is found; nothing is imported). Versions are not compared."""
    import re
    import tomllib
    from importlib import metadata

    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    if extra not in extras:
        raise KeyError(f"pyproject.toml declares no extra {extra!r}")
    for requirement in extras[extra]:
        name = re.match(r"[A-Za-z0-9._-]+", requirement).group(0)
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return False
    return True


def _skipped_branches(report) -> list[str]:
    return [v for k, v in getattr(report, "user_properties", ()) if k == SKIPPED_BRANCH]


def pytest_runtest_logreport(report):
    """With ``$PYTEST_PASSED_LOG``, each test that passed with every branch run, logged by the
    process that sees every report (xdist's controller, or the one process without -n); with
    ``$PYTEST_PARTIAL_LOG``, each test that passed with a branch skipped."""
    if report.when != "call" or not report.passed or os.environ.get("PYTEST_XDIST_WORKER") is not None:
        return
    path = os.environ.get(PARTIAL_LOG_ENV if _skipped_branches(report) else PASSED_LOG_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(report.nodeid + "\n")


def pytest_terminal_summary(terminalreporter):
    """The tests that passed with a branch skipped, and which branches, after pytest's summary."""
    partial = [(r.nodeid, _skipped_branches(r)) for r in terminalreporter.stats.get("passed", ())
               if r.when == "call" and _skipped_branches(r)]
    if partial:
        terminalreporter.write_sep("=", f"{len(partial)} passed with a branch skipped (an extra is missing)")
        for nodeid, skipped in partial:
            terminalreporter.write_line(f"{nodeid}: {'; '.join(skipped)}")
