"""The EB-Manipulation suite on the MuJoCo twin (backend ``mujoco``)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from envs.eb_manipulation import episodes as E
from envs.eb_manipulation import grammar as G
from envs.eb_manipulation import sim as S
from envs.eb_manipulation.env import IMAGE_SIZE, MAX_STEPS, EBManipulationEnv
from harness.types import EpisodeSpec

#: Bumped whenever the twin's rules, physics, scenes or scoring change.
SUITE_VERSION = "2.0.0"  # 2: attach-on-close, invisible dirt, origin mark, malformed actions go on, scenes


class EBManipulationSuite:
    """EB-Manipulation: subsets base, common_sense, complex, spatial (48 each), visual (36).

    Episode ids: ``"<subset>/<family>/<index>"``. Params: ``render`` (cameras on),
    ``image_size`` (500, the original's), ``annotate`` (numbered markers and axis overlay),
    ``wrist`` (also the wrist camera), ``replan_on_failure`` (a failed motion interrupts
    the plan; off = the original's open-loop execution), ``backend`` (``mujoco`` only here;
    the CoppeliaSim adapter is :mod:`envs.eb_manipulation.coppelia`).
    """

    name = E.SUITE_NAME
    version = SUITE_VERSION
    #: its env's gymnasium action space (harness.interfaces.ACTION_KINDS)
    action_kind = "discrete"

    #: ``planner=oracle`` / ``planner=random`` run this suite's own (harness CLI ``agent_aliases``).
    agent_aliases = {"oracle": "eb_manipulation_oracle", "random": "eb_manipulation_random"}

    def __init__(self, render: bool = True, image_size: int = IMAGE_SIZE, annotate: bool = True,
                 wrist: bool = False, replan_on_failure: bool = False, backend: str = "mujoco",
                 generator_seed: int = E.GENERATOR_SEED) -> None:
        if backend != "mujoco":
            raise ValueError(f"EB-Manipulation backend {backend!r} is not available here; use 'mujoco' "
                             "(the CoppeliaSim adapter is envs.eb_manipulation.coppelia, outside the runner)")
        if not 16 <= int(image_size) <= S.MAX_IMAGE_SIZE:
            raise ValueError(f"image_size must be in [16, {S.MAX_IMAGE_SIZE}], got {image_size}")
        self.render = bool(render)
        self.image_size = int(image_size)
        self.annotate = bool(annotate)
        self.wrist = bool(wrist)
        self.replan_on_failure = bool(replan_on_failure)
        self.backend = backend
        self.generator_seed = int(generator_seed)

    def protocol(self, split: str) -> Mapping[str, Any]:
        if split not in E.SUBSETS:
            raise KeyError(f"unknown eb_manipulation split {split!r}; splits are {', '.join(E.SUBSETS)}")
        return {
            "max_steps": MAX_STEPS,
            "backend": self.backend,
            "eval_set_version": E.EVAL_SET_VERSION,
            "eval_set_sha256": E.eval_set_digest(split, self.generator_seed),
            "scene_bounds": G.SCENE_BOUNDS.tolist(),
            "max_sim_steps_per_action": S.MAX_STEPS_PER_ACTION,
            "replan_on_failure": self.replan_on_failure,
            # what the agent sees changes its results
            "image_size": self.image_size if self.render else None,
            "annotate": self.annotate,
            "wrist": self.wrist,
        }

    def splits(self) -> Sequence[str]:
        return E.SUBSETS

    def episodes(self, split: str) -> Sequence[EpisodeSpec]:
        return list(E.episodes(split, self.generator_seed))

    def make_env(self) -> EBManipulationEnv:
        return EBManipulationEnv(render=self.render, image_size=self.image_size, annotate=self.annotate,
                                 wrist=self.wrist, replan_on_failure=self.replan_on_failure)
