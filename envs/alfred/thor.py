"""The ALFRED env on AI2-THOR 2.1.0 (backend ``thor``).

Same action language, limits and scoring as :class:`envs.alfred.env.AlfredEnv`;
the start state is ALFRED's exact restore of the episode's trajectory
(:mod:`envs.thor.restore`), interactions are AI2-THOR API calls
(:mod:`envs.thor.engine`), navigation is a teleport to the reachable position
nearest the grounded object (privileged, recorded in the protocol), and goal
conditions are counted from the simulator's metadata by the household code.
CI does not exercise this backend with a real simulator.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from envs.alfred.env import AlfredEnv
from envs.alfred.executor import AlfredExecutor
from envs.household import TaskSpec
from envs.thor.episode import make_session, start_engine, trajectory_for
from harness.types import EpisodeSpec


class AlfredThorEnv(AlfredEnv):
    def __init__(self, data_roots: Sequence[Path | None], controller_factory: Callable[[], Any] | None = None,
                 render_images: bool = True, x_display: str | None = None, step_timeout_s: float = 120.0,
                 max_restarts: int = 2) -> None:
        super().__init__(render_images=render_images)
        self.data_roots = list(data_roots)
        self.session = make_session(controller_factory, x_display, step_timeout_s, max_restarts)
        self.engine: Any = None

    def _start(self, spec: EpisodeSpec, floor_plan: int, world_seed: int, task: TaskSpec | None) -> AlfredExecutor:
        traj = trajectory_for(spec.metadata, self.data_roots)
        self.engine = start_engine(self.session, traj, floor_plan, task)
        return AlfredExecutor(self.engine.world, engine=self.engine)

    def _image(self) -> Any:
        event = getattr(self.session.controller, "last_event", None)
        return getattr(event, "frame", None)

    def close(self) -> None:
        super().close()
        self.session.close()
