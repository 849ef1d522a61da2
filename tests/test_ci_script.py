"""``.ci/run``'s own guarantees that a run of it would not show until it is too late: its two
pytest passes together select exactly the default run's tests (the parallel one without the
``serial`` tests, the serial one with only them), the GPU image's resolution is keyed on its
inputs, and every step's duration is printed, also when a step fails."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = (REPO / ".ci" / "run").read_text()


def _default_selection() -> str:
    addopts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    return re.search(r"-m '([^']+)'", addopts).group(1)


def test_the_two_pytest_passes_partition_the_default_selection():
    runs = re.findall(r"^python -m pytest (.*?)(?:\s+\|\|.*)?$", SCRIPT, flags=re.M)
    default = _default_selection()
    assert runs == [f'-n 2 -m "({default}) and not serial"', f'-m "({default}) and serial"'], runs


def test_serial_is_a_declared_marker_and_xdist_is_in_the_dev_extra():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert any(m.startswith("serial:") for m in project["tool"]["pytest"]["ini_options"]["markers"])
    assert any(d.startswith("pytest-xdist") for d in project["project"]["optional-dependencies"]["dev"])


def test_one_wheel_install_and_a_keyed_gpu_resolution():
    assert ".ci/wheel_install.py" not in SCRIPT.split("python -m pytest", 1)[1]  # the test is the one install
    key = re.search(r'^GPU_KEY="\$\(cat (.*?) \|', SCRIPT, flags=re.M).group(1).split()
    assert key == ["docker/Dockerfile.gpu", "pyproject.toml", "setup.py", ".ci/docker_steps.py"]
    assert 'python .ci/docker_steps.py docker/Dockerfile.gpu --resolve-only' in SCRIPT and "CI_NIGHTLY" in SCRIPT


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
