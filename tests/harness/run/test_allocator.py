"""harness.run.allocator: freed heap memory stays in the process (glibc), in the
runner's process and in every env worker; a user's own glibc settings win.

Each check runs in a fresh process: the settings are process-wide and one-way.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not hasattr(ctypes.CDLL(None), "mallinfo2"),
    reason="glibc >= 2.33 (mallinfo2) only",
)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]


def kept_after_free(size: int = 24 << 20) -> bool:
    """Whether a freed block of ``size`` bytes stays mapped as free heap top.

    24 MiB: above what glibc's moving threshold reaches in a short run (it then
    maps and unmaps such a block), below the 32 MiB the settings fix.
    """
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = _MallInfo2
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    block = libc.malloc(size)
    libc.free(block)
    return libc.mallinfo2().keepcost >= size


class ProbeEnv:
    """Reports, at reset, whether its process keeps freed memory."""

    def reset(self, *, seed=None, options=None):
        return {}, {"kept": kept_after_free()}

    def step(self, action):  # pragma: no cover - never stepped
        raise AssertionError

    def close(self):
        pass


def _kept_after(code: str, **env: str) -> str:
    """Runs ``code`` in a fresh process, then probes once (a probe moves glibc's threshold)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    script = textwrap.dedent(code) + "\nfrom tests.harness.run.test_allocator import kept_after_free\nprint(kept_after_free())\n"
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**clean, **env},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_default_glibc_returns_freed_memory_and_keep_freed_heap_keeps_it():
    assert _kept_after("") == "False"
    assert _kept_after("from harness.run.allocator import keep_freed_heap; print(keep_freed_heap())") == "True\nTrue"


def test_a_runner_keeps_freed_memory_in_its_process():
    assert _kept_after("""
        from envs.eb_alfred.suite import EBAlfredSuite
        from harness.run.runner import Runner
        from harness.types import RunSpec
        from envs.eb_alfred.agents import OraclePlanner
        suite, agent = EBAlfredSuite(render=False, generated_per_split=1), OraclePlanner()
        Runner(RunSpec(suite=suite.name, split="seen", agent=agent.name, variant="v", limit=1),
               suite, agent, None).run()
    """) == "True"


def test_ray_env_actors_keep_freed_memory():
    # The actor class as a Ray worker process runs it (Ray itself is not needed for this).
    assert _kept_after("""
        from harness.run.ray_actors import EnvActor
        from tests.harness.run.test_allocator import ProbeEnv
        EnvActor(ProbeEnv)
    """) == "True"


def test_process_workers_keep_freed_memory():
    from harness.run.executors import ProcessExecutor
    from harness.types import EpisodeSpec

    executor = ProcessExecutor(ProbeEnv, workers=1)
    try:
        episode = EpisodeSpec(suite="probe", split="s", episode_id="0", seed=0, instruction="")
        (tr,) = executor.reset([(0, {"episode": episode})])
    finally:
        executor.close()
    assert tr.error is None, tr.error
    assert tr.info == {"kept": True}


def test_a_users_glibc_setting_wins():
    out = _kept_after("from harness.run.allocator import keep_freed_heap; print(keep_freed_heap())",
                      MALLOC_TRIM_THRESHOLD_="131072")
    assert out == "False\nFalse"
