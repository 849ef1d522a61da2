"""Provenance recorded with every invocation of a run."""

from __future__ import annotations

import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

from harness.registry.catalog import SUITES

#: Distributions whose versions can move results (recorded when installed): the core's and
#: the agents'; each suite adds its own (``SuitePlugin.packages``, :func:`tracked_packages`).
CORE_PACKAGES = (
    "embodied-transfer", "numpy", "pandas", "torch", "transformers", "peft", "accelerate",
    "alfworld", "textworld", "gymnasium", "pillow", "hydra-core",
)


def tracked_packages() -> tuple[str, ...]:
    names = list(CORE_PACKAGES)
    for plugin in SUITES.entries():
        names += [n for n in getattr(plugin, "packages", ()) if n not in names]
    return tuple(names)


REPO_ROOT = Path(__file__).resolve().parents[2]


def package_versions(names: tuple[str, ...] | None = None) -> dict[str, str]:
    out = {}
    for name in tracked_packages() if names is None else names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def git_state(root: Path = REPO_ROOT) -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            res = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return res.stdout.strip() if res.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"commit": None}
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(dirty)}


def collect(config: Mapping[str, Any] | None = None, agent_identity: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": package_versions(),
        "git": git_state(),
        "config": dict(config or {}),
        "agent_identity": dict(agent_identity or {}),
        "intra_op_threads": intra_op_threads(),
    }


def intra_op_threads() -> int | None:
    """torch's intra-op thread count in force (set by in-process agents, planners/vlm/threads.py);
    None where torch was never imported (no in-process model: nothing to record, nothing imported)."""
    torch = sys.modules.get("torch")
    return int(torch.get_num_threads()) if torch is not None else None
