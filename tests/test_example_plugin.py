"""The example third-party plugin (examples/plugin_suite): installed as its own package, it
registers the suite ``example`` and its ``oracle`` through entry points, runs through the
CLI and passes the conformance checks.

Skips when the package is not installed (``pip install -e examples/plugin_suite``), unless
``REQUIRE_EXAMPLE_PLUGIN=1`` (.ci/run sets it): then it fails.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.store import ResultStore
from tests.conftest import REPO_ROOT
from tests.helpers import require_example_plugin

DISTRIBUTION = "embodied-transfer-example-suite"


@pytest.fixture(scope="module", autouse=True)
def installed() -> None:
    require_example_plugin()


def test_the_entry_points_register_the_suite_and_its_oracle():
    from harness.catalog import PLANNERS, SUITES

    assert "example" in SUITES.names()
    assert "example" in PLANNERS.owners("oracle")
    assert SUITES.entry("example").default_split == "test"


def test_it_passes_check_suite_and_check_agent():
    from harness.testing import AGENT_CHECKS, SUITE_CHECKS, check_agent, check_suite

    assert check_suite("example").passed == list(SUITE_CHECKS)
    assert check_agent("oracle", "example").passed == list(AGENT_CHECKS)


def test_harness_run_suite_example_planner_oracle(tmp_path):
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "harness.cli", "run", "suite=example", "planner=oracle", f"out={out}",
                          "progress=false"], cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    with ResultStore(out) as store:
        records = store.records()
    assert len(records) == 10 and all(r.success and r.error_kind is None for r in records)
    assert {r.split for r in records} == {"test"}
