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
        "from tests.conftest import pytest_collection_modifyitems, pytest_runtest_logreport  # noqa: F401\n"
        "from tests.conftest import pytest_terminal_summary, branches  # noqa: F401\n")
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "def test_a(): pass\n"
        "def test_a_b(): pytest.skip('needs an extra')\n"
        "@pytest.mark.serial\n"
        "def test_c(): pass\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    serial: alone\n")
    log = tmp_path / "passed.txt"
    # a clean pytest environment: not this run's xdist worker (PYTEST_XDIST_WORKER) nor its logs
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(PYTHONPATH=str(REPO), PYTEST_PASSED_LOG=str(log))

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


def _reran():
    import importlib.util

    spec = importlib.util.spec_from_file_location("reran", REPO / ".ci" / "reran.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_test_that_skipped_a_branch_runs_again_with_every_extra(tmp_path):
    """The rerun rule, through the hooks of tests/conftest.py and .ci/reran.py over a small test
    folder run as .ci/run runs it: a test that passed with a branch skipped (the ``branches``
    fixture) is listed apart, not as passed, so the everything-installed pass selects it again;
    there a skipped branch fails it (REQUIRE_EVERY_BRANCH=1), and .ci/reran.py fails the run
    unless it passed there."""
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_collection_modifyitems, pytest_runtest_logreport  # noqa: F401\n"
        "from tests.conftest import pytest_terminal_summary, branches  # noqa: F401\n")
    (tmp_path / "test_y.py").write_text(
        "import os\n"
        "def test_whole(): pass\n"
        "def test_branches(branches):\n"
        "    if os.environ.get('EXTRA_HERE') != '1':\n"
        "        branches.skip('the extra branch', 'its extra is not installed')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "REQUIRE_"))}
    env.update(PYTHONPATH=str(REPO))
    first, partial = tmp_path / "passed.txt", tmp_path / "partial.txt"

    def pytest(*args: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
                              cwd=tmp_path, env={**env, **extra}, capture_output=True, text=True, timeout=300)

    # The README's install: both pass; only the whole one is logged as passed.
    proc = pytest("-n", "2", PYTEST_PASSED_LOG=str(first), PYTEST_PARTIAL_LOG=str(partial))
    assert "2 passed" in proc.stdout and "1 passed with a branch skipped" in proc.stdout, proc.stdout
    assert "test_y.py::test_branches: the extra branch: its extra is not installed" in proc.stdout
    assert first.read_text().splitlines() == ["test_y.py::test_whole"]
    assert partial.read_text().splitlines() == ["test_y.py::test_branches"]
    # Every extra: the partial test is selected again; a branch still skipped fails it ...
    rule = dict(PYTEST_EXCEPT=str(first), REQUIRE_EVERY_BRANCH="1")
    rerun = tmp_path / "rerun.txt"
    proc = pytest("-n", "0", **rule, PYTEST_PASSED_LOG=str(rerun))
    assert "1 failed, 1 deselected" in proc.stdout and "REQUIRE_EVERY_BRANCH=1" in proc.stdout, proc.stdout
    assert not rerun.exists() or rerun.read_text() == ""
    reran = _reran()
    assert reran.main([str(partial), str(rerun if rerun.exists() else first)]) == 1
    # ... and with its extra it passes, every branch run, which is what .ci/reran.py requires.
    proc = pytest("-n", "0", **rule, PYTEST_PASSED_LOG=str(rerun), EXTRA_HERE="1")
    assert "1 passed, 1 deselected" in proc.stdout, proc.stdout
    assert rerun.read_text().splitlines() == ["test_y.py::test_branches"]
    assert reran.main([str(partial), str(rerun)]) == 0
    assert reran.missing(["a", "b", "a"], ["b"]) == ["a"]


def test_the_rerun_rule_is_in_the_script():
    """The first pass logs the partial tests apart; the everything-installed passes run with
    REQUIRE_EVERY_BRANCH=1, log what passed, and .ci/reran.py checks every partial test passed there."""
    readme = SCRIPT[SCRIPT.index('step "README\'s test command'):SCRIPT.index("mv .venv .venv-readme")]
    assert 'PYTEST_PARTIAL_LOG="$PARTIAL_LOG"' in readme and 'eval "$README_TESTS"' in readme
    rest = SCRIPT[SCRIPT.index('export PYTEST_EXCEPT="$PASSED_LOG"'):]
    assert rest.index("REQUIRE_EVERY_BRANCH=1") < rest.index("python -m pytest")
    assert rest.index('export PYTEST_PASSED_LOG="$RERUN_LOG"') < rest.index("python -m pytest")
    assert rest.index("python -m pytest -n 0") < rest.index('python3 .ci/reran.py "$PARTIAL_LOG" "$RERUN_LOG"')
    assert 'sed \'s/^/  /\' "$PARTIAL_LOG"' in rest  # the log names them


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
