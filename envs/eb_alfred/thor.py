"""The EB-ALFRED env on AI2-THOR 2.1.0 (backend ``thor``).

The scene is EmbodiedBench's restore of the episode's trajectory file and every skill
issues EmbodiedBench's controller calls (:mod:`envs.eb_alfred.thor_skills`); goal
conditions come from the simulator's metadata through the household goal code
(:mod:`envs.thor.state`). CI exercises this backend only through a recording stand-in
for the controller (``tests/envs/thor/fake.py``), never with AI2-THOR.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from envs.eb_alfred.env import EBAlfredEnv
from envs.eb_alfred.thor_skills import ThorSkillExecutor
from envs.household import TaskSpec
from envs.thor.episode import make_session, trajectory_for
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

    def _start(self, spec: EpisodeSpec, floor_plan: int, world_seed: int, task: TaskSpec) -> ThorSkillExecutor:
        traj = trajectory_for(spec.metadata, [self.data_dir])
        return ThorSkillExecutor(self.session, traj, floor_plan, task)

    def _observation(self, changed: bool = True) -> dict[str, Any]:
        obs = super()._observation(changed)
        if obs.get("image") is not None:  # the simulator's frame, not the schematic
            event = getattr(self.session.controller, "last_event", None)
            obs["image"] = getattr(event, "frame", None)
        return obs

    def close(self) -> None:
        super().close()
        self.session.close()
