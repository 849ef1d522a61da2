"""The random planner: one uniformly random action from the observation's action list per call."""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from harness.interfaces import AgentRequest
from harness.params import parse
from harness.types import EpisodeSpec
from harness.promptkit.episode_cache import EpisodeCache
from planners.plugin import RandomParams

RANDOM_VERSION = "1"


class RandomPlanner:
    """Uniform over ``observation["actions"]``, seeded by (planner seed, episode key)."""

    name = "random"
    privileged = False
    action_kinds = frozenset({"text"})
    #: Reads the true state / the action list only: envs skip rendering for it.
    reads_images = False

    #: The parameter declaration (planners/plugin.py).
    Params = RandomParams

    def __init__(self, **values: Any) -> None:
        self.params = parse(self.Params, values)
        self.seed = self.params.seed
        self._rngs: EpisodeCache[random.Random] = EpisodeCache()

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name, "version": RANDOM_VERSION}

    def reset(self, episode: EpisodeSpec) -> None:
        self._rngs.pop(episode.key)  # a restarted episode replays from its seed

    def _rng_for(self, episode: EpisodeSpec) -> random.Random:
        return random.Random(f"random-planner|{self.seed}|{'|'.join(map(str, episode.key))}")

    def act(self, requests: Sequence[AgentRequest]) -> list[Sequence[Any]]:
        out: list[Sequence[Any]] = []
        for r in requests:
            actions = r.observation.get("actions") if isinstance(r.observation, Mapping) else None
            if not actions:
                raise ValueError("the random planner needs observation['actions'] (the valid action list)")
            rng = self._rngs.get(r.episode.key, lambda: self._rng_for(r.episode))
            out.append([rng.choice(list(actions))])
        return out
