"""How many intra-op threads an in-process model gets.

PyTorch's default is one intra-op thread per physical core of the machine,
whatever else runs on it. During a run the env worker processes (the
``process`` / ``ray`` executors' workers) and the runner share those cores
with the model, and on a loaded 2-core machine the ``hf`` backend ran 5.6x
slower with the default than with one thread: threads spinning
on cores that other processes hold. The count here is taken from the cores
this process may actually use (its CPU affinity and, in a container, its
cgroup CPU quota), less one core per env worker process, and never below one.
A ``num_threads`` parameter overrides it; the count in force is recorded in
each run's provenance (``harness/run/provenance.py``). The thread count changes
speed, not what is computed, so it is not part of the run identity.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

#: Where the cgroup CPU quota is read (v2 ``cpu.max``, else v1 ``cpu/cpu.cfs_*``).
CGROUP = Path("/sys/fs/cgroup")


def available_cores() -> int:
    """CPUs this process may run on: its affinity mask, capped by a cgroup v2/v1 CPU quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, cores)


def _cgroup_quota() -> float | None:
    """CPUs granted by the cgroup quota (``cpu.max`` or ``cpu.cfs_quota_us``), None if unlimited."""
    try:
        text = (CGROUP / "cpu.max").read_text().split()
        if text and text[0] != "max":
            return int(text[0]) / int(text[1])
        return None
    except (OSError, ValueError, IndexError):
        pass
    try:
        quota = int((CGROUP / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((CGROUP / "cpu" / "cpu.cfs_period_us").read_text())
        return quota / period if quota > 0 and period > 0 else None
    except (OSError, ValueError):
        return None


def intra_op_threads(cores: int, env_workers: int = 0) -> int:
    """The cores left to the model once each env worker process has one; at least one."""
    return max(1, int(cores) - max(0, int(env_workers)))


def resolve_num_threads(num_threads: Any, env_workers: int = 0, cores: int | None = None) -> int:
    """``num_threads``: a positive int (used as given) or None / ``"auto"`` (from the cores)."""
    if num_threads is None or num_threads == "auto":
        return intra_op_threads(available_cores() if cores is None else cores, env_workers)
    if isinstance(num_threads, bool) or not isinstance(num_threads, (int, str)):
        raise ValueError(f"num_threads must be a positive integer or 'auto', got {num_threads!r}")
    try:
        value = int(num_threads)
    except ValueError:
        raise ValueError(f"num_threads must be a positive integer or 'auto', got {num_threads!r}") from None
    if value < 1:
        raise ValueError(f"num_threads must be a positive integer or 'auto', got {num_threads!r}")
    return value


def set_torch_threads(count: int) -> int:
    """Set torch's intra-op thread count (process-wide); returns the count in force."""
    import torch

    if torch.get_num_threads() != count:
        torch.set_num_threads(count)
    return torch.get_num_threads()
