"""Third-party warnings stay off the console and land in the run's log (harness/util/console.py).

Fast: the routing rules in a fresh interpreter (a library module outside the project, written
to a temporary folder: its own console handler, ``warnings.warn``, an ERROR). Slow, in CI: a
real LIBERO run and a real EB-Manipulation run (robosuite's three macro-file lines at import)
print no third-party line on the console, and their log holds those lines.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

LIBRARY = '''
import logging, sys, warnings
log = logging.getLogger("somelib")
log.addHandler(logging.StreamHandler(sys.stderr))   # a library's own console handler
def speak():
    log.warning("somelib: private advice")
    warnings.warn("somelib: deprecated thing", FutureWarning)
    log.error("somelib: real failure")
'''

ROUTE = '''
import os, sys, warnings
sys.path.insert(0, {lib!r})
from harness.util import console
console.install()
import somelib
somelib.speak()
import harness.params
warnings.warn_explicit("ours: shown", UserWarning, harness.params.__file__, 1)
console.log_to({log!r})
somelib.speak()
print("routed", console.routed_count())
'''


def _route(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, Path]:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "somelib.py").write_text(LIBRARY)
    log = tmp_path / "run" / "logs" / "abc.log"
    done = subprocess.run([sys.executable, "-c", ROUTE.format(lib=str(lib), log=str(log))], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO), **env}, capture_output=True, text=True,
                          timeout=120)
    return done, log


def test_third_party_warnings_go_to_the_log_errors_and_ours_to_the_console(tmp_path: Path) -> None:
    done, log = _route(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "private advice" not in done.stderr and "deprecated thing" not in done.stderr
    assert done.stderr.count("somelib: real failure") == 2   # ERROR and above: on the console
    assert "ours: shown" in done.stderr                      # the project's own warnings: unchanged
    text = log.read_text()
    # The lines from before the log was named wait in memory and open the file.
    assert text.count("WARNING somelib: somelib: private advice") == 2
    # Python's warning filters still apply first: the default shows a warning once per place.
    assert text.count("FutureWarning") == 1 and "somelib.py:7: somelib: deprecated thing" in text
    assert "routed 3" in done.stdout


def test_show_puts_them_back_on_the_console(tmp_path: Path) -> None:
    done, log = _route(tmp_path, HARNESS_THIRD_PARTY_WARNINGS="show")
    assert done.returncode == 0, done.stderr
    assert "private advice" in done.stderr and "deprecated thing" in done.stderr
    assert log.read_text().count("private advice") == 2


def test_a_refusal_is_one_line_and_writes_no_log(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "harness.cli", "run", "suite=eb_alfred", "split=nope",
                           f"out={out}"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("harness: error:")
    assert not out.exists()


def _needs(module: str, require_env: str) -> None:
    if importlib.util.find_spec(module) is None:
        if os.environ.get(require_env) == "1":
            pytest.fail(f"{module} is not installed and {require_env}=1", pytrace=False)
        pytest.skip(f"{module} is not installed (its extra)")


def _quiet_run(tmp_path: Path, overrides: list[str]) -> tuple[str, list[Path]]:
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO), "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    env.pop("HARNESS_THIRD_PARTY_WARNINGS", None)
    done = subprocess.run([sys.executable, "-m", "harness.cli", "run", *overrides, "limit=1", f"out={out}",
                           "progress=false"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr, sorted((out / "logs").glob("*.log"))


def _assert_only_harness_lines(stderr: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines and all(": 1 episodes run" in line for line in lines), stderr
    assert "robosuite" not in stderr and "Warning" not in stderr and "WARNING" not in stderr


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("executor", ["local", "process"])  # process: the env imports robosuite in a worker
def test_an_eb_manipulation_run_prints_no_third_party_warning(tmp_path: Path, executor: str) -> None:
    _needs("robosuite", "REQUIRE_EB_MANIPULATION")
    stderr, logs = _quiet_run(tmp_path, ["suite=eb_manipulation", "planner=oracle", f"executor={executor}"])
    _assert_only_harness_lines(stderr)
    assert len(logs) == 1 and "It is recommended to use a private macro file" in logs[0].read_text()


@pytest.mark.slow
@pytest.mark.ci
def test_a_libero_run_prints_no_third_party_warning(tmp_path: Path) -> None:
    _needs("libero", "REQUIRE_LIBERO")
    stderr, logs = _quiet_run(tmp_path, ["suite=libero", "policy=zero", "suite.params.max_steps=5"])
    _assert_only_harness_lines(stderr)
    assert len(logs) == 1 and "It is recommended to use a private macro file" in logs[0].read_text()
