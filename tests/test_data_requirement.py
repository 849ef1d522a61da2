"""CI must not go green with the EB-ALFRED data tests skipped.

``tests/conftest.py``'s ``data_dir`` fixture skips (saying why) where the data is
absent, and fails instead under ``REQUIRE_EB_ALFRED_DATA=1``; ``.ci/run`` sets
that and stops, before installing anything, when the data is missing.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA_TEST = "tests/envs/eb_alfred/test_episodes.py::test_official_splits_load"


def pytest_run(data_dir: Path, require: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "REQUIRE_EB_ALFRED_DATA"}
    env.update(PYTHONPATH=str(REPO), EB_ALFRED_DATA_DIR=str(data_dir))
    if require is not None:
        env["REQUIRE_EB_ALFRED_DATA"] = require
    return subprocess.run([sys.executable, "-m", "pytest", DATA_TEST, "-q", "-rsf", "-p", "no:cacheprovider"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_missing_data_skips_with_the_reason_in_a_users_clone(tmp_path: Path) -> None:
    for require in (None, "0"):
        proc = pytest_run(tmp_path, require)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "1 skipped" in proc.stdout and "EB-ALFRED data not found" in proc.stdout


def test_missing_data_fails_when_required(tmp_path: Path) -> None:
    """Mutation caught: the fixture skipping regardless of REQUIRE_EB_ALFRED_DATA."""
    proc = pytest_run(tmp_path, "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 error" in proc.stdout  # pytest.fail in a fixture is an error of the test
    assert "EB-ALFRED data not found" in proc.stdout and "REQUIRE_EB_ALFRED_DATA=1" in proc.stdout


def ci_run(tmp_path: Path, **env_extra: str) -> tuple[subprocess.CompletedProcess, Path, Path]:
    """Run a copy of ``.ci/run`` in a checkout with no ``../shared`` beside it.

    ``python3`` on PATH is a guard that records being called and exits 1, so a
    script that went on to create its venv and install would be seen (and would
    install nothing)."""
    checkout = tmp_path / "work" / "repo"
    (checkout / ".ci").mkdir(parents=True)
    script = checkout / ".ci" / "run"
    shutil.copy(REPO / ".ci" / "run", script)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    bin_dir, called = tmp_path / "bin", tmp_path / "python3-called"
    bin_dir.mkdir()
    guard = bin_dir / "python3"
    guard.write_text(f"#!/bin/sh\ntouch {called}\nexit 1\n")
    guard.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("EB_ALFRED_DATA_DIR", "REQUIRE_EB_ALFRED_DATA")}
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}"
    env.update(env_extra)
    proc = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    return proc, checkout, called


def test_ci_run_fails_without_shared_data(tmp_path: Path) -> None:
    """Mutation caught: the old ``.ci/run``, which exported the data path only if
    ../shared existed and went on to install and run the tests."""
    assert not (tmp_path / "work" / "shared").exists()
    proc, checkout, called = ci_run(tmp_path)
    assert proc.returncode != 0
    assert "EB-ALFRED data not found at ../shared/data/eb_alfred" in proc.stderr
    assert not called.exists() and not (checkout / ".venv").exists()  # stopped before installing


def test_ci_run_fails_on_a_data_dir_without_splits(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    proc, _, called = ci_run(tmp_path, EB_ALFRED_DATA_DIR=str(empty))
    assert proc.returncode != 0 and "has no splits/splits.json" in proc.stderr
    assert not called.exists()


def test_ci_run_requires_the_data_tests() -> None:
    """The script turns the data tests' skip into a failure for the test run it starts."""
    text = (REPO / ".ci" / "run").read_text()
    assert "export REQUIRE_EB_ALFRED_DATA=1" in text
    assert text.index("export REQUIRE_EB_ALFRED_DATA=1") < text.index("python -m pytest")
