"""EB-ALFRED's own oracle planner: plans in its skill language from the true state.

Privileged: it reads ``info["privileged_state"]`` (a copy of the household
World) and asks the suite's skill-level expert for the shortest plan that
reaches the goal from there, so asking again after a failure replans from the
current state. An upper bound for planners, and a check that episodes are solvable.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from envs.eb_alfred.executor import ExecutorState, SkillExecutor
from envs.eb_alfred.expert import expert_plan
from envs.eb_alfred.skills import SceneVocabulary
from envs.eb_alfred.plugin import OracleParams
from envs.household import World
from harness.interfaces import AgentRequest
from harness.params import parse
from harness.promptkit.episode_cache import EpisodeCache
from harness.types import INFO_PRIVILEGED, EpisodeSpec

ORACLE_VERSION = "1"


class OraclePlanner:
    """Privileged planner: whole expert plans from the current true state."""

    name = "oracle"
    privileged = True
    action_kinds = frozenset({"text"})
    #: Reads the true state / the action list only: envs skip rendering for it.
    reads_images = False

    #: The parameter declaration (envs/eb_alfred/plugin.py).
    Params = OracleParams

    def __init__(self, **values: Any) -> None:
        self.params = parse(self.Params, values)
        self.max_plan_length = self.params.max_plan_length
        # Instance names are fixed when an episode starts, so the vocabulary is
        # built from the first state seen in each episode.
        self._vocab: EpisodeCache[SceneVocabulary] = EpisodeCache()

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name, "version": ORACLE_VERSION}

    def reset(self, episode: EpisodeSpec) -> None:
        self._vocab.pop(episode.key)

    def act(self, requests: Sequence[AgentRequest]) -> list[Sequence[Any]]:
        return [self._plan(r) for r in requests]

    def _plan(self, request: AgentRequest) -> list[str]:
        world = request.info.get(INFO_PRIVILEGED)
        if not isinstance(world, World):
            raise ValueError("the oracle planner needs info['privileged_state'] (reset with privileged=True)")
        if world.task is None:
            raise ValueError("the privileged world carries no task")
        vocab = self._vocab.get(request.episode.key, lambda: SceneVocabulary(world))
        executor = SkillExecutor(world.copy(), vocab, ExecutorState())
        plan = expert_plan(executor, world.task, max_len=self.max_plan_length)
        return list(plan) if plan else []
