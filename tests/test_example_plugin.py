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
    from harness.registry.catalog import PLANNERS, SUITES

    assert "example" in SUITES.names()
    assert "example" in PLANNERS.owners("oracle")
    assert SUITES.entry("example").default_split == "test"


def test_it_passes_check_suite_and_check_agent():
    from harness.check.conformance import AGENT_CHECKS, SUITE_CHECKS, check_agent, check_suite

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


def test_identity_has_no_false_alarm_on_a_split_no_longer_than_the_episodes_checked():
    from harness.check.conformance import check_suite

    # episodes_per_split (10, results=False) varied to 11: with 12 episodes checked the runs hold
    # 10 and 11 episodes; the 10 they share are equal.
    assert check_suite("example", episodes=12, checks=["identity"]).passed == ["identity"]


def test_a_check_script_without_a_main_guard_is_told_why(tmp_path):
    script = tmp_path / "check.py"
    script.write_text("from harness.check.conformance import check_suite\n"
                      "check_suite('example', episodes=1, checks=['schedule'])\n")
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get(
                             "PYTHONPATH", "")])})
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert "schedule: process executor vs local: episode test/000 ended with an error (worker)" in last, last
    assert 'has no `if __name__ == "__main__":` guard' in last, last
