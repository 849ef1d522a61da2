"""The EB-Manipulation suite on the MuJoCo twin (backend ``mujoco``)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from envs.eb_manipulation import episodes as E
from envs.eb_manipulation import grammar as G
from envs.eb_manipulation import sim as S
from envs.eb_manipulation.env import MAX_STEPS, EBManipulationEnv
from envs.eb_manipulation.plugin import EBManipulationParams
from harness.params import parse
from harness.types import EpisodeSpec

#: Bumped whenever the twin's rules, physics, scenes or scoring change.
SUITE_VERSION = "4.0.0"  # 4: the sponge's sensor turns with it (bottom face only), reward along the path, the original's spawn extent
# 3: the original's look (camera, table, wall, shadows), boxes sized to objects, tip frame, base at -0.27 m
# 2: attach-on-close, invisible dirt, origin mark, malformed actions go on, scenes


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

    #: The parameter declaration (envs/eb_manipulation/plugin.py): defaults and checks live there.
    Params = EBManipulationParams

    def __init__(self, **values: Any) -> None:
        self.params = p = parse(self.Params, values)
        self.render = p.render
        self.image_size = p.image_size
        self.annotate = p.annotate
        self.wrist = p.wrist
        self.replan_on_failure = p.replan_on_failure
        self.backend = p.backend
        self.generator_seed = p.generator_seed

    def protocol(self, split: str) -> Mapping[str, Any]:
        """The derived facts that change the results of ``split``: constants and the evaluation
        set's digest (the declared parameters enter the run identity from :attr:`params`)."""
        if split not in E.SUBSETS:
            raise KeyError(f"unknown eb_manipulation split {split!r}; splits are {', '.join(E.SUBSETS)}")
        return {
            "max_steps": MAX_STEPS,
            "eval_set_version": E.EVAL_SET_VERSION,
            "eval_set_sha256": E.eval_set_digest(split, self.generator_seed),
            "scene_bounds": G.SCENE_BOUNDS.tolist(),
            "max_sim_steps_per_action": S.MAX_STEPS_PER_ACTION,
        }

    def splits(self) -> Sequence[str]:
        return E.SUBSETS

    def episodes(self, split: str) -> Sequence[EpisodeSpec]:
        return list(E.episodes(split, self.generator_seed))

    def make_env(self) -> EBManipulationEnv:
        return EBManipulationEnv(render=self.render, image_size=self.image_size, annotate=self.annotate,
                                 wrist=self.wrist, replan_on_failure=self.replan_on_failure)
