"""The ALFRED env on AI2-THOR 2.1.0 (backend ``thor``).

Same action language, limits and scoring as :class:`envs.alfred.env.AlfredEnv`;
the start state is ALFRED's exact restore of the episode's trajectory
(:mod:`envs.thor.restore`), interactions are AI2-THOR API calls in ALFRED's
forms (:mod:`envs.thor.engine`), and goal conditions are counted from the
simulator's metadata by the household code.

``GotoLocation`` stays privileged (the executor grounds the instance with full
knowledge of the scene; recorded in the protocol as ``navigation``) but walks:
ALFRED's expert walk in MoveAhead / RotateLeft / RotateRight / LookUp /
LookDown to ALFRED's pose for the object (:mod:`envs.thor.navigation`). So T
and L* are both in ALFRED's unit, low-level actions: L* is
``len(plan.low_actions)`` (the episode's ``expert_low_actions``), T counts every
primitive walked and every interaction (a GotoLocation that fails before its
first primitive counts one), and the 1000-step limit counts them too (a walk
stops there).
CI does not exercise this backend with a real simulator.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from envs.alfred.env import AlfredEnv
from envs.alfred.executor import AlfredExecutor
from envs.alfred.language import GOTO, LowAction
from envs.household import ActionResult, TaskSpec
from envs.thor.engine import WALK
from envs.thor.episode import make_session, start_engine, trajectory_for
from harness.types import EpisodeSpec


class AlfredThorEnv(AlfredEnv):
    #: L* in ALFRED's unit: len(plan.low_actions) (envs/alfred/episodes.py).
    expert_length_key = "expert_low_actions"

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
        self.engine.navigation = WALK
        return AlfredExecutor(self.engine.world, engine=self.engine)

    def _execute(self, low: LowAction, budget: int) -> tuple[ActionResult, int]:
        """A GotoLocation costs the primitives it walked (one if it failed before the first);
        an interaction costs one."""
        assert self._ex is not None
        self.engine.last_primitives, self.engine.max_primitives = 0, budget
        res = self._ex.execute(low)
        if low.action != GOTO:
            return res, 1
        walked = self.engine.last_primitives
        return res, walked if (res.ok or walked) else 1

    def _image(self) -> Any:
        event = getattr(self.session.controller, "last_event", None)
        return getattr(event, "frame", None)

    def close(self) -> None:
        super().close()
        self.session.close()
