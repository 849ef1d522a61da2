"""The EB-ALFRED env on AI2-THOR 2.1.0 (backend ``thor``).

EB-ALFRED's skills run through the same :class:`~envs.eb_alfred.executor.SkillExecutor`
as on the household backend, with the AI2-THOR engine underneath
(:mod:`envs.thor.engine`): ``find`` teleports to the reachable position nearest
the object, facing it; ``put down`` puts into the last found receptacle with
the executor's put counting (a failed put on a receptacle with 3 or more puts
drops the object); goal conditions come from the simulator's metadata through
the household goal code. The scene is ALFRED's exact restore of the episode's
trajectory file. CI does not exercise this backend with a real simulator.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from envs.eb_alfred.env import EBAlfredEnv
from envs.eb_alfred.executor import ExecutorState, SkillExecutor
from envs.eb_alfred.skills import SceneVocabulary
from envs.household import TaskSpec
from envs.thor.episode import make_session, start_engine, trajectory_for
from harness.types import EpisodeSpec


class EBAlfredThorEnv(EBAlfredEnv):
    def __init__(self, data_dir: Path | None, controller_factory: Callable[[], Any] | None = None,
                 render_images: bool = True, x_display: str | None = None, step_timeout_s: float = 120.0,
                 max_restarts: int = 2) -> None:
        super().__init__(backend="household", render_images=render_images)
        self.backend = "thor"
        self.data_dir = data_dir
        self.session = make_session(controller_factory, x_display, step_timeout_s, max_restarts,
                                    screen_size=self.image_size)
        self.engine: Any = None

    def _start(self, spec: EpisodeSpec, floor_plan: int, world_seed: int, task: TaskSpec) -> SkillExecutor:
        traj = trajectory_for(spec.metadata, [self.data_dir])
        self.engine = start_engine(self.session, traj, floor_plan, task)
        world = self.engine.world
        return SkillExecutor(world, SceneVocabulary(world), ExecutorState(), engine=self.engine)

    def _observation(self, changed: bool = True) -> dict[str, Any]:
        obs = super()._observation(changed)
        if obs.get("image") is not None:  # the simulator's frame, not the schematic
            event = getattr(self.session.controller, "last_event", None)
            obs["image"] = getattr(event, "frame", None)
        return obs

    def close(self) -> None:
        super().close()
        self.session.close()
