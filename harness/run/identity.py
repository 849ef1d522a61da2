"""A run's identity and its episodes: what changes results (hashed into the run id), and
which of the split's episodes a run selects and has left to run."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any, Iterator

from harness.interfaces import Agent, Suite
from harness.params import identity_of
from harness.stats.sequential import identity_entry as sequential_identity
from harness.types import IDENTITY_SCHEMA_VERSION, EpisodeSpec, LazyEpisodes, RunSpec
from harness.util.redact import redact


#: Version of how the run identity is made. 2: the declared result-changing parameters of the
#: suite and the agent (harness.params) are hashed from their declarations, beside the
#: suite's protocol facts and the agent's own identity (checkpoint hashes, versions).
IDENTITY_VERSION = 2


def run_identity(spec: RunSpec, suite: Suite, agent: Agent) -> dict[str, Any]:
    """What changes results. Worker counts, batch sizes and limits are left out.

    The suite's and the agent's parameters enter through their declarations
    (:func:`harness.params.identity_of` of ``.params``: every field marked as changing
    results, and no other), so no plugin lists its settings by hand; ``protocol(split)``
    adds the suite's derived facts (constants, data hashes) and ``identity()`` the
    agent's (checkpoint hashes, prompt and parser versions).
    """
    identity = {
        "identity_version": IDENTITY_VERSION,
        "schema_version": IDENTITY_SCHEMA_VERSION,
        "suite": suite.name,
        "suite_version": suite.version,
        "suite_params": identity_of(getattr(suite, "params", None)),
        "protocol": dict(suite.protocol(spec.split)),
        "split": spec.split,
        "agent": spec.agent,
        "agent_params": identity_of(getattr(agent, "params", None)),
        "agent_identity": dict(agent.identity()),
        "variant": spec.variant,
    }
    if spec.seed:
        # Shifts every episode's seed: another experiment, not more of the same one (its
        # rows would otherwise pool with the unshifted run's in one table row). Added only
        # when set, so the run ids of unshifted runs (every existing store) stay as they were.
        identity["seed_offset"] = spec.seed
    if spec.stopping:
        # A sequential comparison (harness/stats/sequential/): its rule and settings decide which
        # episodes run. Added only when set, so every other run id stays as it was.
        identity["stopping"] = sequential_identity(spec.stopping)
    if spec.repeat:
        # The same episodes and seeds once more (an agent that samples): a run of its own, which
        # tables show as a repeat of the cell beside the others (harness.tables.selection.family_of).
        identity["repeat"] = spec.repeat
    # Credentials (an agent naming a URL with userinfo, a key) change no result: never hashed or stored.
    return redact(identity)


def run_id_of(identity: dict[str, Any]) -> str:
    blob = json.dumps(identity, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def select_episodes(suite: Suite, spec: RunSpec) -> list[EpisodeSpec]:
    """The split's episodes in suite order, limited, then the run's seed offset applied.

    The limit slices the suite's sequence before anything is materialised, so
    a suite whose episodes are generated lazily builds only those selected.
    """
    episodes = suite.episodes(spec.split)
    if spec.limit is not None:
        episodes = episodes[: spec.limit]
    episodes = list(episodes)
    if spec.seed:
        episodes = [replace(e, seed=e.seed + spec.seed) for e in episodes]
    return episodes


def split_size(suite: Suite, split: str) -> int | None:
    """How many episodes the suite's split holds (before any limit, and before a suite's own
    selection parameters: an optional ``split_total(split)`` says how many the whole split
    holds); None where it cannot say (the error, if any, is raised again where the episodes
    are read)."""
    try:
        total = getattr(suite, "split_total", None)
        return int(total(split)) if callable(total) else len(suite.episodes(split))
    except Exception:  # noqa: BLE001 - plan_episodes reports it
        return None


def plan_episodes(suite: Suite, spec: RunSpec, done: set) -> tuple[int, int, Iterator[EpisodeSpec]]:
    """(episodes selected, episodes left to run, those episodes as a lazy iterator).

    A lazily generated split that can name its episodes without building them
    (``episode_id_of(i)``, see :class:`harness.types.LazyEpisodes`) skips the finished
    ones by id first, and builds each remaining episode only when a slot takes it: a
    resumed run starts at once instead of regenerating the whole split. Within one run
    id an episode id names one episode (the seed follows from it), so skipping by id
    is skipping by key. Other splits are read as before.
    """
    episodes = suite.episodes(spec.split)
    if spec.limit is not None:
        episodes = episodes[: spec.limit]
    offset = spec.seed

    def shifted(e: EpisodeSpec) -> EpisodeSpec:
        return replace(e, seed=e.seed + offset) if offset else e

    if isinstance(episodes, LazyEpisodes) and episodes.episode_id is not None:
        id_of = episodes.episode_id_of
        done_ids = {k[2] for k in done}
        left = [i for i in range(len(episodes)) if id_of(i) not in done_ids] if done_ids else range(len(episodes))
        return len(episodes), len(left), (shifted(episodes[i]) for i in left)
    todo = [e for e in select_episodes(suite, spec) if e.key not in done]
    return len(episodes), len(todo), iter(todo)
