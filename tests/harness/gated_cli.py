"""``harness`` CLI with the random planner held at a gate (for the SIGKILL test).

Usage: ``python -m tests.harness.gated_cli GATE_DIR PAUSE_AT K harness-args...``

Runs the real :func:`harness.cli.main` with the real random planner, except
that ``RandomPlanner.act``:

* asked for any batch that contains an episode whose index in the split is
  ``K`` or more, touches ``GATE_DIR/blocked`` and then waits until the process
  is killed. So episodes ``K, K+1, ...`` can never finish in that process,
  whatever the speed or load of the machine, and a kill sent after
  ``blocked`` appears always lands mid-run;
* once, for the first batch that contains episode ``PAUSE_AT``, first sleeps
  longer than the store's group-commit delay (``RecordWriter.GROUP_SECONDS``),
  so the next finished episode commits every record waiting: with
  ``BATCH <= PAUSE_AT`` and ``PAUSE_AT + BATCH <= K``, at least one episode has
  finished before the pause and at least one finishes after it and before
  the gate, so rows are committed before ``blocked`` appears.

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


def install_gate(gate_dir: Path, pause_at: int, k: int) -> None:
    from harness.store import RecordWriter
    from planners.random_planner import RandomPlanner

    act = RandomPlanner.act
    pause_s = getattr(RecordWriter, "GROUP_SECONDS", 0.0) + 0.1
    paused = False

    def gated_act(self, requests):
        nonlocal paused
        indices = [episode_index(r.episode.episode_id) for r in requests]
        if not paused and pause_at in indices:
            paused = True
            time.sleep(pause_s)
        if any(i >= k for i in indices):
            (gate_dir / "blocked").touch()
            while True:  # until killed
                time.sleep(1)
        return act(self, requests)

    RandomPlanner.act = gated_act  # type: ignore[method-assign]


def main(argv: list[str]) -> int:
    gate_dir, pause_at, k, *args = argv
    install_gate(Path(gate_dir), int(pause_at), int(k))
    from harness.cli import main as harness_main

    return harness_main(args)  # never returns once the gate is reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
