"""Action-sequence dumps of ALFRED episodes (what the test splits are good for).

ALFRED's test trajectories carry no goal, so SR/GC cannot be computed locally;
what a run on ``tests_seen`` / ``tests_unseen`` produces is the sequence of
actions per trajectory. This writes them, from a result store, as
``{split: [{task_id: [action, ...]}, ...]}`` (one entry per episode, the
ALFRED leaderboard's grouping by split and trajectory id).

The actions are this suite's language (``GotoLocation`` teleports and ALFRED
interaction names on object types), not AI2-THOR's discrete low-level actions:
a dump of a privileged-navigation run is not a leaderboard submission.

Run: ``python -m envs.alfred.dump OUTDIR [SPLIT ...] > actions.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Iterable

from envs.alfred.protocol import TEST_SPLITS
from harness.types import EpisodeRecord


def trial_id(episode_id: str) -> str:
    """The ``trial_...`` component of ``"[<task>/]<trial>/<r>"`` (ALFRED's task id)."""
    parts = episode_id.split("/")[:-1]
    trials = [p for p in parts if p.startswith("trial_")]
    return trials[-1] if trials else (parts[-1] if parts else episode_id)


def action_sequences(records: Iterable[EpisodeRecord], splits: Iterable[str] = TEST_SPLITS) -> dict[str, Any]:
    wanted = set(splits)
    out: dict[str, list[dict[str, list[str]]]] = {s: [] for s in sorted(wanted)}
    for r in sorted(records, key=lambda r: (r.split, r.episode_id)):
        if r.suite != "alfred" or r.split not in wanted:
            continue
        history = (r.extra or {}).get("history") or []
        out[r.split].append({trial_id(r.episode_id): [str(a) for a, _ in history]})
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    from harness.store import ResultStore

    store = ResultStore(Path(argv[0]), readonly=True)
    print(json.dumps(action_sequences(store.records(), argv[1:] or TEST_SPLITS), indent=1))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
