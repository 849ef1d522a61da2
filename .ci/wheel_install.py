"""Install the project as a user would (a wheel, not editable) and use it from another folder.

Copies the checkout's files (tracked and untracked-but-not-ignored: no stale ``build/``) into a
temporary folder, builds the wheel there (``pip wheel --no-deps``), creates a fresh venv
(``python -m venv``, no system site-packages), installs the core dependencies named in
pyproject.toml and then the wheel with ``--no-deps``, and from an empty folder outside the
checkout, with no ``PYTHONPATH``:

* ``harness list`` lists the built-in plugins (read from the installed entry points) and the
  variants (the config tree is package data);
* ``gymnasium.make("embodied_transfer/EBAlfred-v0")`` works in a fresh interpreter that never
  imported the project (the wheel's start-up hook, ``envs/gym_plugin.py``);
* the README's main job runs and prints its table: ``harness run -m planner=oracle,random
  split=seen,unseen`` then ``harness table ... --baseline random`` -- with ``limit=`` episodes
  per split (``--limit``, default 10; 0 runs the full splits) to keep CI short.

    python .ci/wheel_install.py [--limit N]

Exit status 0 when every check passes; each failed check prints one line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

GYM_CHECK = """
import sys, gymnasium
assert not any(m == "harness" or m.startswith(("harness.", "envs.gym_registration", "planners", "policies"))
               for m in sys.modules), "the project was imported before gymnasium.make"
env = gymnasium.make("embodied_transfer/EBAlfred-v0")
obs, info = env.reset(seed=0)
print("gym ok", type(env.unwrapped).__name__, env.unwrapped.render().shape)
"""


def source_files(root: Path) -> list[Path]:
    """The checkout's files as git sees them (tracked + untracked, not ignored)."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, check=True).stdout
    return [Path(p) for p in out.decode().split("\0") if p and (root / p).is_file()]


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    shown = [c if "\n" not in c else "<check>" for c in cmd]
    print(f"wheel_install: $ {' '.join(shown)}  (in {cwd})", flush=True)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=10, help="episodes per split of the main job (0: all)")
    args = ap.parse_args(argv)
    core = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="wheel-install-") as tmp_name:
        tmp = Path(tmp_name)
        src, dist, venv, work = tmp / "src", tmp / "dist", tmp / "venv", tmp / "work"
        for rel in source_files(ROOT):
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
        work.mkdir()
        steps = [
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(src)],
            [sys.executable, "-m", "venv", str(venv)],
        ]
        for cmd in steps:
            done = run(cmd, tmp, env)
            if done.returncode != 0:
                print(f"wheel_install: error: {' '.join(cmd[:4])} failed:\n{done.stdout}{done.stderr}", file=sys.stderr)
                return 1
        wheels = sorted(dist.glob("*.whl"))
        py, bindir = venv / "bin" / "python", venv / "bin"
        env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
        for cmd in ([str(py), "-m", "pip", "install", "-q", *core],
                    [str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheels[-1])]):
            done = run(cmd, work, env)
            if done.returncode != 0:
                print(f"wheel_install: error: pip install failed:\n{done.stdout}{done.stderr}", file=sys.stderr)
                return 1

        harness = str(bindir / "harness")
        where = run([str(py), "-c", "import harness; print(harness.__file__)"], work, env)
        if str(venv) not in where.stdout:
            problems.append(f"harness is not imported from the venv: {where.stdout.strip()} {where.stderr.strip()}")

        listed = run([harness, "list"], work, env)
        variants = next((lines for lines in listed.stdout.split("variants (")[1:]), "")
        if listed.returncode != 0 or not all(v in variants for v in ("base", "favor_sft", "cfg_sft")):
            problems.append(f"harness list shows no variants (rc {listed.returncode}): {listed.stderr.strip()[-300:]}")
        elif str(venv) not in variants.splitlines()[0]:  # the config tree the wheel carries, not a checkout's
            problems.append(f"harness list reads its configs from outside the venv: {variants.splitlines()[0]}")
        for plugin in ("eb_alfred", "libero", "oracle", "vlm", "process"):
            if plugin not in listed.stdout:
                problems.append(f"harness list does not list the plugin {plugin!r}")

        gym = run([str(py), "-c", GYM_CHECK], work, env)
        if gym.returncode != 0 or "gym ok" not in gym.stdout:
            problems.append(f"gymnasium.make without a project import failed: {gym.stderr.strip()[-400:]}")
        else:
            print(f"wheel_install: {gym.stdout.strip()}")

        limit = [f"limit={args.limit}"] if args.limit else []
        job = run([harness, "run", "-m", "planner=oracle,random", "split=seen,unseen", *limit, "out=runs/demo"],
                  work, env)
        table = run([harness, "table", "runs/demo", "--baseline", "random"], work, env)
        if job.returncode != 0:
            problems.append(f"the main job failed (rc {job.returncode}): {job.stderr.strip()[-400:]}")
        elif table.returncode != 0 or "| oracle |" not in table.stdout or "| random |" not in table.stdout:
            problems.append(f"harness table printed no table (rc {table.returncode}): {table.stderr.strip()[-400:]}")
        else:
            print(table.stdout, end="")
    for line in problems:
        print(f"wheel_install: error: {line}", file=sys.stderr)
    if not problems:
        print("wheel_install: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
