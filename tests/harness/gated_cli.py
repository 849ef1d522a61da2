"""``harness`` CLI with the random planner held at a gate (for the SIGKILL test).

Usage: ``python -m tests.harness.gated_cli GATE_DIR K harness-args...``

Runs the real :func:`harness.cli.entry.main` with the real random planner, except
that ``RandomPlanner.act``, asked for any batch that contains an episode whose
index in the split is ``K`` or more, touches ``GATE_DIR/blocked`` and then
waits until the process is killed. So episodes ``K, K+1, ...`` can never
finish in that process, whatever the speed or load of the machine, and a kill
sent after ``blocked`` appears always lands mid-run. The store's writer commits
finished episodes within about a second even while the runner is held inside
``act`` (its watchdog thread), so the episodes finished before the gate reach
the store while the run waits there.

The planner's actions and identity are unchanged (the gate only delays), so
the run has the same run id as an ungated ``harness run``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def episode_index(episode_id: str) -> int:
    """``"seen/012" -> 12`` (generated episode ids are ``<split>/<index>``)."""
    return int(episode_id.rpartition("/")[2])


def install_gate(gate_dir: Path, k: int) -> None:
    from planners.random_planner import RandomPlanner

    act = RandomPlanner.act

    def gated_act(self, requests):
        if any(episode_index(r.episode.episode_id) >= k for r in requests):
            (gate_dir / "blocked").touch()
            while True:  # until killed
                time.sleep(1)
        return act(self, requests)

    RandomPlanner.act = gated_act  # type: ignore[method-assign]


def main(argv: list[str]) -> int:
    gate_dir, k, *args = argv
    install_gate(Path(gate_dir), int(k))
    from harness.cli.entry import main as harness_main

    return harness_main(args)  # never returns once the gate is reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
