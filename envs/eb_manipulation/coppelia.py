"""Adapter around EmbodiedBench's own CoppeliaSim environment (``EBManEnv``), for users who
have CoppeliaSim 4.1 + PyRep + EmbodiedBench's ``amsolver`` installed.

It offers the twin's types: ``reset(options={"episode": EpisodeSpec})``, ``step(7 ints |
InvalidOutput)`` with the same observation dict (``image``, ``object_coordinates``,
``object_coordinates_text``, ``instruction``, ``feedback``) and ``info`` keys, so planners
run unchanged. Episodes are the original data set's (``official_episodes`` walks
``data/<subset>/eval/<task>/variationV/episodes/episodeE/`` in EBManEnv's order).

**Not exercised by CI, and not tested against the simulator here:** CoppeliaSim cannot be
installed on our machines and no recorded payloads of it exist. The tests cover only the
pure translation functions below (data walking, action and step translation).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from envs.eb_manipulation import episodes as E
from envs.eb_manipulation import grammar as G
from envs.eb_manipulation.env import (
    INFO_ENV_STEPS, INFO_MOTION_OK, INFO_REWARD, MAX_STEPS, TERM_MAX_STEPS, TERM_SUCCESS,
)
from harness.interfaces import AgentContractError, InvalidOutput
from harness.types import (
    INFO_ACTION_OK, INFO_EXPERT_LENGTH, INFO_FEEDBACK, INFO_GC_SATISFIED, INFO_GC_TOTAL, INFO_INVALID_ACTIONS,
    INFO_SUCCESS, INFO_TASK_TYPE, INFO_TERMINATION, EpisodeSpec,
)

#: EBManEnv.EVAL_SETS: the task files of each subset, in the data set's order.
EVAL_SETS = {s: list(E.SUBSET_FAMILIES[s]) for s in E.SUBSETS}
#: The cameras whose masks and point clouds make the coordinate dictionary (the original's four).
CAMERAS = ("front", "left_shoulder", "right_shoulder", "wrist")
_EPISODE_RE = re.compile(r"variation(\d+)/episodes/episode(\d+)")


def official_episodes(data_dir: str | Path, subset: str) -> list[EpisodeSpec]:
    """The subset's episodes from EmbodiedBench's data folder, in EBManEnv's order (task file
    order, then (variation, episode) ascending); ``metadata["index"]`` is EBManEnv's
    ``selected_indexes`` entry. The instruction is filled in at reset (it lives in configs.pkl)."""
    root = Path(data_dir) / subset / "eval"
    if not root.is_dir():
        raise FileNotFoundError(f"{root} not found: point data_dir at EmbodiedBench's eb_manipulation data folder")
    out: list[EpisodeSpec] = []
    for task in EVAL_SETS[subset]:
        found = []
        for cfg in root.rglob("configs*"):
            if cfg.parents[3].name != task:
                continue
            m = _EPISODE_RE.search(cfg.parent.as_posix())
            key = (int(m.group(1)), int(m.group(2))) if m else (float("inf"), float("inf"))
            found.append((key, cfg.parent))
        for (var, ep), folder in sorted(found, key=lambda t: t[0]):
            eid = f"{subset}/{task}/v{var}e{ep}"
            out.append(EpisodeSpec(E.SUITE_NAME, subset, eid, 0, "", {
                "subset": subset, "family": task, "task_class": E.FAMILY_CLASS[task], "index": len(out),
                "variation": var, "episode": ep, "path": folder.relative_to(root).as_posix(),
            }))
    return out


def translate_action(action: Any) -> list[int] | str:
    """Our action -> EBManEnv's discrete action (the same 7 integers), or the reason it is invalid."""
    if isinstance(action, InvalidOutput):
        return action.reason
    if G.is_non_finite(action):
        raise AgentContractError(f"action contains NaN or infinity: {action!r}")
    try:
        return G.validate_action(action)
    except G.ActionFormatError as e:
        return str(e)


def coordinates_from_points(points: Mapping[str, np.ndarray]) -> dict[str, list[int]]:
    """Averaged object points (world, from the original's masks) -> the model's dictionary:
    binned, sorted by Y bin ascending, renamed ``object 1..N`` (the original's rule)."""
    binned = sorted(((n, G.position_to_bin(p)) for n, p in points.items()), key=lambda t: t[1][1])
    return {f"object {i + 1}": b for i, (_, b) in enumerate(binned)}


def translate_step(result: tuple[Any, float, bool, Mapping[str, Any]], *, steps: int, invalid: int,
                   instruction: str, task_class: str, coords: Mapping[str, list[int]], image: Any) -> tuple[dict, float, bool, bool, dict]:
    """EBManEnv.step's ``(obs, reward, terminate, info)`` -> our 5-tuple (obs, reward, terminated,
    truncated, info). ``steps`` / ``invalid`` are the counts after this step."""
    _, reward, terminate, info = result
    success = bool(info.get("task_success", 0.0) == 1.0)
    motion_ok = bool(info.get("action_success", 0.0) == 1.0)
    feedback = str(info.get("env_feedback", ""))
    terminated = success
    truncated = (not success) and (bool(terminate) or steps >= MAX_STEPS)
    obs = {"instruction": instruction, "object_coordinates": dict(coords), "object_coordinates_text": str(dict(coords)),
           "feedback": feedback, "image": image}
    out_info = {
        INFO_SUCCESS: success, INFO_GC_SATISFIED: 0, INFO_GC_TOTAL: 0, INFO_INVALID_ACTIONS: invalid,
        INFO_EXPERT_LENGTH: None, INFO_TASK_TYPE: task_class, INFO_ACTION_OK: True, INFO_FEEDBACK: feedback,
        INFO_TERMINATION: TERM_SUCCESS if success else (TERM_MAX_STEPS if truncated else None),
        INFO_MOTION_OK: motion_ok, INFO_REWARD: float(reward), INFO_ENV_STEPS: steps, "instruction": instruction,
    }
    return obs, float(reward), terminated, truncated, out_info


class CoppeliaEBManipulationEnv:
    """EBManEnv behind the twin's env interface (needs EmbodiedBench + CoppeliaSim; not run in CI).

    ``env_factory(subset, selected_indexes)`` builds the original env (default: EmbodiedBench's
    ``EBManEnv(eval_set=subset, selected_indexes=[i], render_mode=None)``)."""

    def __init__(self, env_factory: Callable[[str, list[int]], Any] | None = None) -> None:
        self._factory = env_factory or _default_factory
        self._env: Any = None
        self._spec: EpisodeSpec | None = None

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None) -> tuple[dict, dict]:
        spec = (options or {}).get("episode")
        if not isinstance(spec, EpisodeSpec):
            raise ValueError("reset needs options={'episode': EpisodeSpec}")
        self.close()
        self._spec = spec
        self._env = self._factory(spec.split, [int(spec.metadata["index"])])
        description, obs = self._env.reset()
        self._instruction = str(description)
        self._steps = self._invalid = 0
        self._last_obs = vars(obs) if not isinstance(obs, Mapping) else obs
        coords = self._coords()
        o = {"instruction": self._instruction, "object_coordinates": coords, "object_coordinates_text": str(coords),
             "feedback": "", "image": self._last_obs.get("front_rgb")}
        info = {INFO_SUCCESS: False, INFO_GC_SATISFIED: 0, INFO_GC_TOTAL: 0, INFO_INVALID_ACTIONS: 0,
                INFO_EXPERT_LENGTH: None, INFO_TASK_TYPE: spec.metadata["task_class"], INFO_ACTION_OK: True,
                INFO_FEEDBACK: "", INFO_TERMINATION: None, "instruction": self._instruction}
        return o, info

    def _coords(self) -> dict[str, list[int]]:
        from embodiedbench.envs.eb_manipulation.eb_man_utils import form_object_coord_for_input

        coords, *_ = form_object_coord_for_input(dict(self._last_obs), self._spec.metadata["task_class"], list(CAMERAS))
        return coords

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        act = translate_action(action)
        if isinstance(act, str):  # invalid: no simulator call, one step used (see the twin's env)
            self._steps += 1
            self._invalid += 1
            fake = (None, 0.0, False, {"env_feedback": f"The last action was invalid ({act}).",
                                         "task_success": 0.0, "action_success": 0.0})
            obs, r, term, trunc, info = translate_step(fake, steps=self._steps, invalid=self._invalid,
                                                       instruction=self._instruction,
                                                       task_class=self._spec.metadata["task_class"],
                                                       coords=self._coords(), image=self._last_obs.get("front_rgb"))
            info[INFO_ACTION_OK] = False
            return obs, r, term, trunc, info
        result = self._env.step(act)
        self._steps += 1
        if result[3].get("action_success", 0.0) != 1.0:
            self._invalid += 1
        self._last_obs = result[0] if isinstance(result[0], Mapping) else vars(result[0])
        return translate_step(result, steps=self._steps, invalid=self._invalid, instruction=self._instruction,
                              task_class=self._spec.metadata["task_class"], coords=self._coords(),
                              image=self._last_obs.get("front_rgb"))

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None


def _default_factory(subset: str, selected: list[int]) -> Any:
    try:
        from embodiedbench.envs.eb_manipulation.EBManEnv import EBManEnv
    except ImportError as e:  # pragma: no cover - needs CoppeliaSim
        raise RuntimeError("the CoppeliaSim backend needs EmbodiedBench's eb_manipulation env, CoppeliaSim 4.1 "
                           "and PyRep installed (see docs_eb_manipulation.md)") from e
    return EBManEnv(eval_set=subset, selected_indexes=selected, render_mode=None)
