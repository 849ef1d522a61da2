"""Core value types shared by every suite, agent and executor.

Persisted records (:class:`EpisodeRecord`, :class:`RunSpec`) carry a
``schema_version`` so a store written by an older harness can be read, or
refused with a clear message, by a newer one.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any, Callable, Mapping

#: Version of the persisted record layout (EpisodeRecord / RunSpec / store tables).
#: 2: ``planner_output_errors`` and ``empty_plan`` on records; the ``transcripts`` table.
#: 3: ``path_length`` on records (``INFO_PATH_LENGTH``; None in older stores).
#: 4: ``values`` on records (per-episode metric values, ``INFO_VALUES``; {} in older stores).
SCHEMA_VERSION = 4
#: The record layout named in run identities. Schema 4 only adds ``values``, which no
#: schema-3 run could have stored (the built-in suites derive theirs from the record's
#: fields), so a resumed schema-3 run reads the same records: its run id stays.
IDENTITY_SCHEMA_VERSION = 3

# --- Documented ``info`` keys -------------------------------------------------
# Every suite's env puts these in the ``info`` dict returned by ``reset`` and
# ``step``. The runner reads them; nothing else about an env is assumed.
INFO_SUCCESS = "success"  #: bool - task goal satisfied now
INFO_GC_SATISFIED = "gc_satisfied"  #: int - goal conditions satisfied now (ALFRED ``s``)
INFO_GC_TOTAL = "gc_total"  #: int - goal conditions in the task (ALFRED ``ts``); 0 where a suite has none
INFO_INVALID_ACTIONS = "invalid_actions"  #: int - invalid actions so far in the episode
INFO_EXPERT_LENGTH = "expert_length"  #: int | None - expert plan length L* when known
#: int - optional: the agent's path length so far in L*'s unit, the T of path-length-weighted
#: metrics (absent: T is the runner's step count)
INFO_PATH_LENGTH = "path_length"
INFO_TASK_TYPE = "task_type"  #: str | None - task family, for per-type breakdowns
INFO_ACTION_OK = "action_ok"  #: bool - the last action succeeded; False makes the runner drop the rest of a plan and ask the agent again
INFO_FEEDBACK = "feedback"  #: str - text feedback on the last action (shown to planners)
INFO_TERMINATION = "termination"  #: str | None - why the episode ended (e.g. "success", "max_steps", "max_invalid")
INFO_PRIVILEGED = "privileged_state"  #: only when reset with options={"privileged": True}: a picklable true state for oracle agents
#: dict name -> number | None - optional: the episode's per-episode metric values (the suite's
#: declared metrics read them; kept in the record's ``values``)
INFO_VALUES = "values"
#: str - optional: the answer of a one-step (question) episode, kept in the record's ``extra["answer"]``
INFO_ANSWER = "answer"
INFO_ARTIFACTS = "artifacts"  #: dict name -> path of files the env wrote for this episode (videos); kept in the record's extra, relative to the store's folder

# --- Documented ``protocol(split)`` keys ------------------------------------------
#: str - optional: the unit in which a suite counts L* (``expert_length``) and T (``path_length``,
#: else steps); tables name it beside path-length-weighted metrics.
PROTOCOL_EXPERT_LENGTH_UNIT = "expert_length_unit"

#: Termination reason the runner records when an agent returns no action at all.
TERMINATION_EMPTY_PLAN = "empty_plan"
#: Termination reason of an env whose protocol ends an episode on a wall-clock limit
#: (LIBERO-PRO's 50 s): a failure class of its own (``time_limit``), counted as a timeout.
TERMINATION_EPISODE_TIMEOUT = "episode_timeout"


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode of a suite: what to reset the env to.

    ``metadata`` must be JSON-serialisable (task type, subset, floor plan, ...).
    The key ``(suite, split, episode_id, seed)`` identifies the episode in a run.
    """

    suite: str
    split: str
    episode_id: str
    seed: int
    instruction: str
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.suite, self.split, self.episode_id, self.seed)


@dataclass
class EpisodeRecord:
    """The outcome of one finished (or failed) episode. One store row each."""

    run_id: str
    variant: str
    suite: str
    split: str
    episode_id: str
    seed: int
    task_type: str | None = None
    success: bool = False
    gc_satisfied: int = 0
    gc_total: int = 0
    steps: int = 0
    agent_calls: int = 0
    invalid_actions: int = 0
    expert_length: int | None = None
    wall_time_s: float = 0.0
    termination: str | None = None
    #: None for a completed episode; otherwise "env", "agent", "timeout" or "worker".
    error_kind: str | None = None
    error_message: str | None = None
    attempts: int = 1
    #: Agent outputs that yielded no action (EmbodiedBench ``planner_output_error``).
    planner_output_errors: int = 0
    #: The episode ended because the agent returned an empty plan.
    empty_plan: bool = False
    #: T of the path-length weight in L*'s unit, where the env reports it (``INFO_PATH_LENGTH``);
    #: None: T is ``steps``.
    path_length: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: Per-episode metric values (``INFO_VALUES``): JSON numbers or None; {} in older stores.
    values: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.suite, self.split, self.episode_id, self.seed)

    def to_dict(self) -> dict[str, Any]:
        """A shallow dict of the fields (``extra`` is shared, not copied)."""
        return {name: getattr(self, name) for name in _RECORD_FIELD_NAMES}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "EpisodeRecord":
        version = data.get("schema_version", SCHEMA_VERSION)
        if version > SCHEMA_VERSION:
            raise ValueError(
                f"episode record has schema_version {version}, newer than this harness "
                f"({SCHEMA_VERSION}); upgrade the harness to read it"
            )
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class RunSpec:
    """What one ``harness run`` evaluates. Resolved from the CLI's config.

    ``suite_params`` / ``agent_params`` are passed to the registered factories.
    Executor settings (``executor``, ``num_workers``, ``batch_size``) do not change
    results and are therefore not part of the run identity.
    """

    suite: str
    split: str
    agent: str
    variant: str
    agent_kind: str = "planner"  # "planner" or "policy"
    suite_params: Mapping[str, Any] = field(default_factory=dict)
    agent_params: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    #: Declared repeat index: 0, or K > 0 to run the same cell again with the same episodes and
    #: seeds (an agent that samples, temperature > 0). A separate run (its own run id), shown
    #: as a repeat of the cell, not as a newer run superseding it (harness.tables.selection).
    repeat: int = 0
    limit: int | None = None
    executor: str = "local"
    num_workers: int = 1
    batch_size: int = 8
    #: process executor: envs per worker process (not part of the run identity).
    envs_per_worker: int = 1
    #: The executor's own parameters, checked against its declaration (not part of the run identity).
    executor_params: Mapping[str, Any] = field(default_factory=dict)
    episode_timeout_s: float | None = None
    #: Wall-clock limit of one batched agent call; a call past it becomes a
    #: ``timeout`` error record for every episode it served.
    agent_timeout_s: float | None = None
    max_retries: int = 1
    #: Pipelined runner (default): the agent answers ready episodes while the envs step the
    #: others; False: lockstep rounds (harness/run/runner.py). Neither changes results.
    pipeline: bool = True
    #: Pipelined runner: longest wait (s) for an agent call to fill to ``batch_size`` while
    #: envs are still stepping.
    batch_wait_s: float = 0.01
    #: Keep each agent call's full prompt in the transcripts table (raw outputs are always kept).
    record_prompts: bool = False
    #: Keep each agent call's observation image(s) as files (harness/run/artifacts.py):
    #: True always, False never, None (default) within the store's frame budget.
    record_images: bool | None = None
    #: ``stopping=sequential``: the comparison's settings (harness.stats.sequential.SequentialStopping
    #: as a dict); its rule, version, alpha, margin, metric and baseline enter the run identity.
    stopping: Mapping[str, Any] | None = None
    schema_version: int = SCHEMA_VERSION

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True, default=str)


_RECORD_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(EpisodeRecord))


class LazyEpisodes(Sequence[EpisodeSpec]):
    """``count`` episodes where episode i is ``make(i)``, built only when read.

    For generated splits (episode i depends only on the generator seed and i):
    slicing returns another lazy view, so ``episodes[:1]`` builds one episode
    (the runner slices by ``limit`` before it reads). ``make`` should memoise.
    """

    def __init__(self, make: Callable[[int], EpisodeSpec], count: int, start: int = 0,
                 episode_id: Callable[[int], str] | None = None) -> None:
        self.make, self.count, self.start = make, count, start
        #: Episode i's id without building it (optional): lets a resumed run skip finished
        #: episodes by id before building anything (harness.run.identity.plan_episodes).
        self.episode_id = episode_id

    def episode_id_of(self, index: int) -> str:
        """Episode ``index``'s id, without building it (only when ``episode_id`` was given)."""
        if self.episode_id is None:
            raise TypeError("these lazy episodes cannot name an episode without building it")
        return self.episode_id(self.start + index)

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            lo, hi, step = index.indices(self.count)
            if step != 1:
                return [self[i] for i in range(lo, hi, step)]
            return LazyEpisodes(self.make, max(0, hi - lo), self.start + lo, self.episode_id)
        if index < 0:
            index += self.count
        if not 0 <= index < self.count:
            raise IndexError(index)
        return self.make(self.start + index)
