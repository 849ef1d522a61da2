"""Gymnasium for every suite: the shared env base class, the declared spaces, the registration.

Each suite's env class derives from :class:`SuiteEnv` (a real ``gymnasium.Env``) and declares
its ``observation_space`` / ``action_space`` with the builders below; :func:`register_envs`
registers one id per suite, so that::

    import gymnasium as gym
    env = gym.make("embodied_transfer/EBAlfred-v0", split="unseen")   # also Alfred, Libero, EBManipulation
    obs, info = env.reset(seed=0)              # an episode of the split, drawn with env.np_random
    obs, reward, terminated, truncated, info = env.step(obs["actions"][0])

with no project import after a wheel install (:mod:`envs.gym_plugin`: Gymnasium 1.x has no
plugin hook, so the wheel ships a start-up hook that registers the ids when ``gymnasium`` is
imported). In a source checkout or an editable install, ``import envs.gym_registration`` first,
or name the module in the id: ``gym.make("envs.gym_registration:embodied_transfer/EBAlfred-v0")``
(gymnasium imports the module named before the colon). Importing any suite's env module
registers them too. Keyword arguments are the split and the suite's parameters
(``data_dir=...``, as listed by ``harness list SUITE``) and ``render_mode="rgb_array"``. The
harness's runner uses the same env classes and always passes the episode:
``reset(seed=spec.seed, options={"episode": spec, ...})``.

Action spaces say what an action *is*: :class:`FreeText` where the action is a string (EB-ALFRED's
skills, ALFRED's triplets; the envs also take an id into ``obs["actions"]``), a ``Box`` for
continuous actions (LIBERO's 7-D end-effector delta), ``MultiDiscrete`` for EB-Manipulation's 7
bins. :data:`ACTION_KINDS` maps each space class to the word suites and agents declare
(:mod:`harness.interfaces`), so an agent that cannot act on a suite is refused before a run.

Observations are dicts whose text and lists vary per episode (a scene's action list, the objects'
coordinate dictionary), so they use the permissive spaces of :mod:`harness.spaces` (public, for
plugins too): :class:`FreeText` (any string), :class:`TextList` (a list of strings) and
:class:`Record` (a dict with optional keys; an image is ``None`` when the agent reads no images).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import gymnasium
import numpy as np
from gymnasium import spaces

from envs.gym_plugin import GYM_IDS, NAMESPACE, register as _register_ids  # noqa: F401 (re-exported)
from harness.spaces import AnyValue, FreeText, Record, TextList  # noqa: F401 (public; re-exported)


def image_space(size: int | tuple[int, int]) -> spaces.Box:
    h, w = (size, size) if isinstance(size, int) else size
    return spaces.Box(0, 255, (int(h), int(w), 3), np.uint8)


def household_spaces(image_size: int, extra: Mapping[str, spaces.Space] = ()) -> tuple[spaces.Space, spaces.Space]:
    """EB-ALFRED / ALFRED on the household engine: text + image + the scene's action list; a text action."""
    obs = Record({"text": FreeText(), "actions": TextList(), "instruction": FreeText(), **dict(extra)},
                 optional={"image": image_space(image_size)})
    return obs, FreeText(1000, min_length=1)


#: gymnasium action-space class -> the action kind suites and agents declare (harness.interfaces).
ACTION_KINDS: dict[type, str] = {spaces.Text: "text", spaces.Box: "continuous", spaces.MultiDiscrete: "discrete"}


def action_kind(space: spaces.Space) -> str:
    """The declared kind of an action space ("text", "continuous", "discrete")."""
    for cls, kind in ACTION_KINDS.items():
        if isinstance(space, cls):
            return kind
    raise TypeError(f"no action kind for {space!r}")


class SuiteEnv(gymnasium.Env):
    """Base class of the suites' env classes: gymnasium's seeding, render modes and default episodes.

    Subclasses set ``observation_space`` / ``action_space`` in ``__init__``, call
    :meth:`_episode_options` first thing in ``reset`` and implement ``render``.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    render_mode: str | None = None
    #: Episodes ``reset`` draws from when its options name none (set by :func:`make_suite_env`).
    gym_episodes: Sequence[Any] = ()

    def _episode_options(self, seed: int | None, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """Seed ``np_random`` (gymnasium's ``Env.reset``) and return the options with an episode:
        the given one, else one of :attr:`gym_episodes` drawn with ``np_random``."""
        gymnasium.Env.reset(self, seed=seed)
        options = dict(options or {})
        if options.get("episode") is None:
            if not self.gym_episodes:
                raise ValueError(f"{type(self).__name__}.reset needs options={{'episode': EpisodeSpec}} "
                                 "(or an env made by gymnasium.make, which draws one from its split)")
            options["episode"] = self.gym_episodes[int(self.np_random.integers(len(self.gym_episodes)))]
        return options


def make_suite_env(suite: str, split: str | None = None, render_mode: str | None = None,
                   **suite_params: Any) -> SuiteEnv:
    """A suite's env for ``gymnasium.make``: ``reset()`` draws episodes of ``split``."""
    from harness.registry.catalog import SUITES

    if render_mode is not None and render_mode not in SuiteEnv.metadata["render_modes"]:
        raise ValueError(f"render_mode {render_mode!r} not in {SuiteEnv.metadata['render_modes']}")
    built = SUITES.build(suite, **suite_params)
    split = split or next(d for s, d, _ in GYM_IDS.values() if s == suite)
    env = built.make_env()
    env.gym_episodes = tuple(built.episodes(split))
    env.render_mode = render_mode
    return env


def register_envs() -> None:
    """Register every suite under :data:`NAMESPACE` (idempotent; runs on import of this module)."""
    _register_ids(gymnasium.registry, gymnasium.register)


register_envs()
