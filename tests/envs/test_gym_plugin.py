"""Gymnasium ids without a project import: the wheel's start-up file and its finder
(envs/gym_plugin.py), in fresh interpreters; and the frame shapes docs/architecture.md states.

The full path (a wheel installed into a fresh venv) is tests/test_wheel_install.py; here the
same ``.pth`` line setup.py writes is put into a temporary site folder, which the interpreter
processes at start-up like site-packages.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")

REPO = Path(__file__).resolve().parents[2]

FRESH = """
import sys
import gymnasium
names = [m for m in sys.modules if m == "harness" or m.startswith(("harness.", "envs.gym_registration", "envs.eb_alfred"))]
assert names == [], names
assert "embodied_transfer/EBAlfred-v0" in gymnasium.registry
env = gymnasium.make("embodied_transfer/Alfred-v0", generated_per_split=2)
env.reset(seed=0)
print("shape", env.unwrapped.render().shape)
"""


def _pth_line() -> str:
    text = (REPO / "setup.py").read_text()
    match = re.search(r'^PTH_LINE = "(.*)\\n"$', text, re.M)
    assert match, "setup.py defines PTH_LINE"
    return match.group(1) + "\n"


def _python(code: str, site_dir: Path | None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    # A sitecustomize-free start: -c code runs after site processed the site folders; the
    # temporary folder is added the way site-packages is (its .pth lines run).
    prelude = f"import site; site.addsitedir({str(site_dir)!r})\n" if site_dir else ""
    return subprocess.run([sys.executable, "-c", prelude + code], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_the_wheels_pth_line_registers_the_ids_when_gymnasium_is_imported(tmp_path: Path) -> None:
    (tmp_path / "embodied_transfer_gym.pth").write_text(_pth_line())
    done = _python(FRESH, tmp_path)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "shape (224, 224, 3)" in done.stdout


def test_without_the_hook_gymnasium_does_not_know_the_namespace() -> None:
    done = _python("import gymnasium; gymnasium.make('embodied_transfer/EBAlfred-v0')", None)
    assert done.returncode != 0 and "NamespaceNotFound" in done.stderr


def test_the_hook_at_start_up_imports_neither_gymnasium_nor_the_suites(tmp_path: Path) -> None:
    (tmp_path / "embodied_transfer_gym.pth").write_text(_pth_line())
    done = _python("import sys; print(sorted(m for m in sys.modules if m.startswith(('gymnasium', 'numpy', 'envs'))))",
                   tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['envs', 'envs.gym_plugin']"


def test_a_broken_registration_never_breaks_gymnasiums_import(tmp_path: Path) -> None:
    (tmp_path / "embodied_transfer_gym.pth").write_text(_pth_line())
    code = ("import envs.gym_plugin as p\n"
            "def boom(*a, **k): raise RuntimeError('x')\n"
            "p.register = boom\n"
            "import gymnasium\n"
            "print('imported', 'embodied_transfer/EBAlfred-v0' in gymnasium.registry)")
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "imported False"


def test_docs_state_the_measured_render_shapes(data_dir) -> None:
    import gymnasium as gym
    import envs.gym_registration  # noqa: F401

    doc = (REPO / "docs" / "architecture.md").read_text()
    env = gym.make("embodied_transfer/EBAlfred-v0", split="base", data_dir=str(data_dir), render_mode="rgb_array")
    env.reset(seed=0)
    h, w, c = env.render().shape
    assert f"frame = env.render()                   # ({h}, {w}, {c}) uint8" in doc
    assert f"{h} × {w} for `EBAlfred-v0`" in doc
    alfred = gym.make("embodied_transfer/Alfred-v0", generated_per_split=2)
    alfred.reset(seed=0)
    ah, aw, _ = alfred.unwrapped.render().shape
    assert f"{ah} × {aw} for `Alfred-v0`" in doc
