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


def pytest_runtest_logreport(report):
    """With ``$PYTEST_PASSED_LOG``, each test that passed, logged by the process that sees every
    report (xdist's controller, or the one process without -n)."""
    path = os.environ.get(PASSED_LOG_ENV)
    if path and report.when == "call" and report.passed and os.environ.get("PYTEST_XDIST_WORKER") is None:
        with open(path, "a", encoding="utf-8") as f:
            f.write(report.nodeid + "\n")
