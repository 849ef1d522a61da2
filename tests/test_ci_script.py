"""``.ci/run``'s own guarantees that a run of it would not show until it is too late: its two
pytest passes together select exactly the default run's tests (the parallel one without the
``serial`` tests, the serial one with only them), the GPU image's resolution is keyed on its
inputs, and every step's duration is printed, also when a step fails."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = (REPO / ".ci" / "run").read_text()


def _default_selection() -> str:
    addopts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    return re.search(r"-m '([^']+)'", addopts).group(1)


def test_the_readme_command_runs_first_then_the_rest_in_two_passes():
    """The README's test command, read from README.md, runs in its own install; then, with every
    extra, the default selection less what passed there, in a parallel and a serial pass that
    together are that selection."""
    assert 'README_TESTS="$(python3 .ci/readme_command.py tests)"' in SCRIPT
    assert SCRIPT.index('eval "$README_TESTS"') < SCRIPT.index('pip install -q -e ".[dev,models')
    runs = re.findall(r"^python -m pytest (.*?)(?:\s+\|\|.*)?$", SCRIPT, flags=re.M)
    default = _default_selection()
    assert runs == [f'-n 2 -m "({default}) and not serial"', f'-n 0 -m "({default}) and serial"'], runs
    rest = SCRIPT[SCRIPT.index('export PYTEST_EXCEPT="$PASSED_LOG"'):SCRIPT.index("unset PYTEST_EXCEPT")]
    assert all(f"python -m pytest {r}" in rest for r in runs)


def test_the_readme_command_is_read_from_the_readme():
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_command", REPO / ".ci" / "readme_command.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tests = module.command("tests")
    assert tests.endswith("python -m pytest") and 'pip install -e ".[dev]"' in tests
    assert tests in (REPO / "README.md").read_text()
    assert "harness table" in module.command("main")


def test_the_default_run_uses_every_core_skips_serial_there_and_logs_what_passed(tmp_path):
    """The hooks of tests/conftest.py, run by pytest over a small test folder: under -n the
    serial tests skip saying how to run them; what passed is logged; a rerun with that log as
    $PYTEST_EXCEPT runs only the rest."""
    addopts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "-n auto" in addopts.split("'")[-1]
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_collection_modifyitems, pytest_runtest_logreport  # noqa: F401\n")
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "def test_a(): pass\n"
        "def test_a_b(): pytest.skip('needs an extra')\n"
        "@pytest.mark.serial\n"
        "def test_c(): pass\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    serial: alone\n")
    log = tmp_path / "passed.txt"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTEST_PASSED_LOG": str(log)}
    env.pop("PYTEST_EXCEPT", None)

    def pytest(*args: str, **extra: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", *args],
                              cwd=tmp_path, env={**env, **extra}, capture_output=True, text=True, timeout=300)
        return proc.stdout

    out = pytest("-n", "2")
    assert "1 passed, 2 skipped" in out and "serial: cannot share the machine" in out, out
    assert log.read_text().splitlines() == ["test_x.py::test_a"]
    out = pytest("-n", "0", PYTEST_EXCEPT=str(log), PYTEST_PASSED_LOG=str(tmp_path / "second.txt"))
    assert "1 passed, 1 skipped, 1 deselected" in out, out  # test_a_b is not test_a: exact ids
    assert (tmp_path / "second.txt").read_text().splitlines() == ["test_x.py::test_c"]


def test_serial_is_a_declared_marker_and_xdist_is_in_the_dev_extra():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert any(m.startswith("serial:") for m in project["tool"]["pytest"]["ini_options"]["markers"])
    assert any(d.startswith("pytest-xdist") for d in project["project"]["optional-dependencies"]["dev"])


def test_one_wheel_install_and_a_keyed_gpu_resolution():
    assert ".ci/wheel_install.py" not in SCRIPT.split("python -m pytest", 1)[1]  # the test is the one install
    key = re.search(r'^GPU_KEY="\$\(cat (.*?) \|', SCRIPT, flags=re.M).group(1).split()
    assert key == ["docker/Dockerfile.gpu", "pyproject.toml", "setup.py", ".ci/docker_steps.py"]
    assert 'python3 .ci/docker_steps.py docker/Dockerfile.gpu --resolve-only' in SCRIPT and "CI_NIGHTLY" in SCRIPT


def test_step_durations_are_printed_when_a_step_fails(tmp_path):
    checkout = tmp_path / "repo"
    (checkout / ".ci").mkdir(parents=True)
    (checkout / ".ci" / "run").write_text(SCRIPT)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "EB_ALFRED_DATA_DIR": str(tmp_path / "none")}
    proc = subprocess.run(["bash", str(checkout / ".ci" / "run")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "has no splits/splits.json" in proc.stderr
    tail = proc.stderr.split(".ci/run: step durations (exit 1):", 1)[1].splitlines()
    assert re.fullmatch(r"\s+\d+m\d\ds  data check", tail[1]) and tail[2].strip().endswith("total"), proc.stderr
