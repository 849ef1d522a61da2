"""The random planner: one uniformly random action from the observation's action list per call."""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from harness.interfaces import AgentRequest
from planners.episode_cache import EpisodeCache
from harness.types import EpisodeSpec


class RandomPlanner:
    """Uniform over ``observation["actions"]``, seeded by (planner seed, episode key)."""

    name = "random"
    privileged = False
    action_kinds = frozenset({"text"})
    #: Reads the true state / the action list only: envs skip rendering for it.
    reads_images = False

    def __init__(self, seed: int = 0) -> None:
        self.seed = int(seed)
        self._rngs: EpisodeCache[random.Random] = EpisodeCache()

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name, "seed": self.seed}

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
