"""openpi's reference implementation from its own packages, in its own venv.

``openpi-client`` pins numpy<2, so it cannot live beside the harness: the
first call builds a venv (``python -m venv`` + ``pip install`` of the pinned
releases below, ~10 s with a warm pip cache) and later calls reuse it. Where:
``$EMBODIED_TRANSFER_VENVS``, else /work/venvs when writable, else
~/.cache/embodied-transfer/venvs.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

#: The reference releases tested against (PyPI). openpi-client 0.1.2 imports
#: typing_extensions without declaring it, so it is installed explicitly.
OPENPI_PACKAGES = ("openpi-client==0.1.2", "openpi-server==0.1.0", "typing-extensions")


def venv_root() -> Path:
    env = os.environ.get("EMBODIED_TRANSFER_VENVS")
    if env:
        return Path(env)
    work = Path("/work/venvs")
    if work.is_dir() and os.access(work, os.W_OK):
        return work
    return Path.home() / ".cache" / "embodied-transfer" / "venvs"


def openpi_python() -> Path:
    """The reference venv's python, building the venv on first use.
    Raises RuntimeError (with pip's output) when it cannot be built."""
    root = venv_root()
    root.mkdir(parents=True, exist_ok=True)
    venv = root / "openpi-ref"
    marker = venv / "installed.txt"
    want = "\n".join(OPENPI_PACKAGES)
    with open(root / ".openpi-ref.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.is_file() and marker.read_text() == want:
            return venv / "bin" / "python"
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, capture_output=True)
        proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *OPENPI_PACKAGES],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"pip install {' '.join(OPENPI_PACKAGES)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        marker.write_text(want)
    return venv / "bin" / "python"
