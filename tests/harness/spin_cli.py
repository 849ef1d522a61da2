"""``harness`` CLI whose random planner computes with torch forever from episode K on.

Usage: ``python -m tests.harness.spin_cli K [cancellable] harness-args...``

Stands in for the in-process model (the hf backend's ``generate``) that an
``agent_timeout_s`` abandons: its thread is still inside torch when the run
ends. With ``cancellable`` the loop checks ``harness.run.calls.call_cancelled()``
as the hf backend's stopping criterion does; without it, it never stops. Runs
the real :func:`harness.cli.entry.main` as the ``harness`` process does (``argv=None``).
"""

from __future__ import annotations

import sys


def install(k: int, cancellable: bool) -> None:
    import torch

    from harness.run.calls import call_cancelled
    from planners.random_planner import RandomPlanner

    act = RandomPlanner.act

    def spinning_act(self, requests):
        if any(int(r.episode.episode_id.rpartition("/")[2]) >= k for r in requests):
            a = torch.randn(256, 256)
            while not (cancellable and call_cancelled()):
                a = (a @ a).tanh()
            raise RuntimeError("generation stopped: the call was cancelled")
        return act(self, requests)

    RandomPlanner.act = spinning_act  # type: ignore[method-assign]


if __name__ == "__main__":
    k, *rest = sys.argv[1:]
    cancellable = bool(rest) and rest[0] == "cancellable"
    args = rest[1:] if cancellable else rest
    install(int(k), cancellable)
    from harness.cli.entry import main

    sys.argv = ["harness", *args]
    sys.exit(main())
