"""Starting an episode on AI2-THOR from its ALFRED trajectory file (shared by both suites)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from envs.eb_alfred.episodes import read_trajectory
from envs.household import TaskSpec
from envs.thor.engine import ThorEngine
from envs.thor.restore import restore
from envs.thor.session import ThorSession


def trajectory_for(metadata: Mapping[str, Any], roots: Sequence[Path | None]) -> dict[str, Any]:
    """The trajectory JSON an episode names (``metadata["trajectory"]``, relative to a data root)."""
    rel = metadata.get("trajectory")
    if not rel:
        raise ValueError("the AI2-THOR backend restores episodes from their ALFRED trajectory file; this "
                         "episode has none (generated splits run on the household backend only)")
    for root in roots:
        if root is not None and (Path(root) / rel).is_file():
            return read_trajectory(Path(root) / rel)
    raise FileNotFoundError(f"trajectory file {rel} not found under {', '.join(str(r) for r in roots if r)}")


def start_engine(session: ThorSession, traj: Mapping[str, Any], floor_plan: int,
                 task: TaskSpec | None) -> ThorEngine:
    """Restore the scene (restarting a crashed simulator up to ``session.max_restarts`` times)."""
    event = session.run_with_restarts(lambda: restore(session, traj))
    return ThorEngine(session, floor_plan, task, event)


def make_session(controller_factory: Callable[[], Any] | None, x_display: str | None, step_timeout_s: float,
                 max_restarts: int, screen_size: int | None = None) -> ThorSession:
    return ThorSession(controller_factory, x_display=x_display, step_timeout_s=step_timeout_s,
                       max_restarts=max_restarts, screen_size=screen_size)
