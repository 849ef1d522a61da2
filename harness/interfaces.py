"""The small typed interfaces the core works through.

The core never imports a simulator: suites, planners and policies are found
through :mod:`harness.registry` and only have to satisfy these protocols.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

from harness.types import EpisodeSpec


@runtime_checkable
class EpisodeEnv(Protocol):
    """Gymnasium's API, one episode at a time.

    ``reset(seed=spec.seed, options={"episode": spec, "privileged": bool})``
    starts the episode described by an :class:`EpisodeSpec`. ``info`` carries
    the documented keys of :mod:`harness.types` (``INFO_*``). An invalid action
    (unknown string, unparseable model output) is *not* an exception: the env
    counts it and reports ``action_ok=False`` with a feedback message.
    """

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]: ...

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]: ...

    def close(self) -> None: ...


@runtime_checkable
class Suite(Protocol):
    """A benchmark suite: its episodes, its protocol constants, and its env."""

    name: str
    #: Bumped whenever the suite's rules, episodes or scoring change.
    version: str

    def protocol(self, split: str) -> Mapping[str, Any]:
        """Constants that change the results of ``split`` (step limits, backend,
        data hash...).

        Hashed into the run identity, so changing any of them starts a new run
        instead of resuming an old one. Per split, because limits can differ
        between splits (LIBERO's max steps) and data files may back only some.
        Must be JSON-serialisable and include ``max_steps``.
        """
        ...

    def splits(self) -> Sequence[str]: ...

    def episodes(self, split: str) -> Sequence[EpisodeSpec]:
        """The episodes of a split, in a fixed order. Raises ``KeyError`` for an unknown split."""
        ...

    def make_env(self) -> EpisodeEnv:
        """A fresh env able to run any episode of this suite (one per worker slot)."""
        ...


@dataclass
class AgentRequest:
    """What an agent sees when asked for its next plan / action chunk."""

    episode: EpisodeSpec
    observation: Any
    info: Mapping[str, Any]
    #: (action, feedback) for every env step of this episode so far.
    history: Sequence[tuple[Any, str]] = field(default_factory=tuple)


@runtime_checkable
class Agent(Protocol):
    """A planner or a policy. Batched: one ``act`` call serves many episodes.

    ``act`` returns, for each request, the actions to execute open-loop: a plan
    for a planner, an action chunk for a policy. The runner executes them one
    ``env.step`` each until one fails (``info["action_ok"] is False``) or the
    episode ends, then asks again. An empty sequence ends the episode
    (termination ``"empty_plan"``). Unparseable model output should be passed
    on as the raw text so the env counts it as an invalid action.
    """

    name: str
    #: True if the agent needs the env's true state (``info["privileged_state"]``).
    privileged: bool

    def identity(self) -> Mapping[str, Any]:
        """What changes this agent's behaviour (checkpoint hash, prompt version...).

        JSON-serialisable; hashed into the run identity.
        """
        ...

    def reset(self, episode: EpisodeSpec) -> None:
        """Called once when an episode starts, before its first ``act``."""
        ...

    def act(self, requests: Sequence[AgentRequest]) -> list[Sequence[Any]]: ...
