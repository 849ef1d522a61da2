"""Run a Dockerfile's install steps in a clean venv, so the images cannot drift from the code.

CI has no Docker engine. This reads ``docker/Dockerfile`` (or the file given), copies exactly
what its ``COPY`` lines copy into an empty folder, creates a fresh venv and runs its
``RUN pip install ...`` lines there, then its ``CMD``. With ``--resolve-only`` the pip lines
run with ``--dry-run`` (resolution only: the GPU image's CUDA torch is gigabytes).

    python .ci/docker_steps.py docker/Dockerfile
    python .ci/docker_steps.py docker/Dockerfile.gpu --resolve-only
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    buf = ""
    for line in dockerfile.read_text().splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        buf += line.rstrip()
        if buf.endswith("\\"):
            buf = buf[:-1] + " "
            continue
        word, _, rest = buf.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dockerfile", type=Path)
    ap.add_argument("--resolve-only", action="store_true", help="pip install --dry-run (no CMD)")
    args = ap.parse_args(argv)
    steps = instructions(args.dockerfile)
    with tempfile.TemporaryDirectory(prefix="docker-steps-") as tmp:
        app = Path(tmp) / "app"
        app.mkdir()
        for word, rest in steps:
            if word == "COPY":
                *srcs, dest = shlex.split(rest)
                for src in srcs:
                    s = ROOT / src
                    if not s.exists():
                        print(f"docker_steps: {args.dockerfile}: COPY source {src} does not exist", file=sys.stderr)
                        return 1
                    target = app / (dest if not dest.endswith("/") and dest not in ("./", ".") else s.name)
                    if s.is_dir():
                        shutil.copytree(s, target, ignore=shutil.ignore_patterns("__pycache__"))
                    else:
                        shutil.copy2(s, target)
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        env = dict(os.environ, PATH=f"{venv / 'bin'}:{os.environ['PATH']}", VIRTUAL_ENV=str(venv))
        env.pop("PYTHONPATH", None)
        ran = 0
        for word, rest in steps:
            if word != "RUN" or "pip install" not in rest:
                continue
            # --no-cache-dir keeps an image small; here the shared pip cache serves the wheels
            # .ci/run already fetched (the same packages, so the same install).
            cmd = rest.replace("--no-cache-dir", "").strip() + (" --dry-run" if args.resolve_only else "")
            print(f"docker_steps: RUN {cmd}", flush=True)
            subprocess.run(cmd, shell=True, cwd=app, env=env, check=True)
            ran += 1
        if ran == 0:
            print(f"docker_steps: {args.dockerfile} has no pip install step", file=sys.stderr)
            return 1
        cmd_line = [rest for word, rest in steps if word == "CMD"]
        if cmd_line and not args.resolve_only:
            cmd = json.loads(cmd_line[-1])
            print(f"docker_steps: CMD {cmd}", flush=True)
            subprocess.run(cmd, cwd=app, env=env, check=True)
    print(f"docker_steps: {args.dockerfile}: ok")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
