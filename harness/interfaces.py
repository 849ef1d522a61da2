"""The small typed interfaces the core works through.

The core never imports a simulator: suites, planners and policies are found
through :mod:`harness.registry.loader` and only have to satisfy these protocols.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence, Union, runtime_checkable

from harness.types import EpisodeSpec


@runtime_checkable
class EpisodeEnv(Protocol):
    """Gymnasium's API, one episode at a time.

    ``reset(seed=spec.seed, options={"episode": spec, "privileged": bool, ...})``
    starts the episode described by an :class:`EpisodeSpec`. Further reset
    options the runner passes (an env ignores those it has no use for):

    * ``"render"`` (bool, default True): False when the agent never reads
      images (``Agent.reads_images``); the env may then skip rendering.
    * ``"artifacts_dir"`` (str | None): an absolute folder for this run's
      per-episode files (videos); the env names files by the episode key so
      nothing is overwritten, and reports them in ``info["artifacts"]``
      (name -> path). The record keeps each path relative to the store's
      folder when the file lies inside it.

    ``info`` carries the documented keys of :mod:`harness.types` (``INFO_*``).
    An invalid action (unknown string, an :class:`InvalidOutput`) is *not* an
    exception: the env counts it and reports ``action_ok=False`` with a
    feedback message. An action that breaks the agent contract (NaN, wrong
    shape) raises :class:`AgentContractError`: the episode becomes an
    ``agent`` error record and the simulator is never fed garbage.
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

    # Optional: ``unavailable(split) -> str | None``, why a split the suite knows cannot run in this
    # installation (e.g. its data files are not shipped); ``harness run`` refuses with that line.
    # Optional: ``canonical_split(split) -> str``, the name of a split the suite accepts under another
    # spelling (cfg_bench: ``FAU`` for ``fau``); ``harness run`` runs (and identifies) it by that name.

    def episodes(self, split: str) -> Sequence[EpisodeSpec]:
        """The episodes of a split, in a fixed order. Raises ``KeyError`` for an unknown split."""
        ...

    # Optional: ``split_total(split) -> int``, how many episodes the whole split holds where the
    # suite's own parameters select part of it (LIBERO's ``tasks`` / ``trials``): tables mark a
    # cell that ran fewer as partial, like ``limit`` (harness.run.identity.split_size, harness.tables.caveats).

    def make_env(self) -> EpisodeEnv:
        """A fresh env able to run any episode of this suite (one per worker slot)."""
        ...

    # ``planner=oracle`` on a suite runs that suite's own oracle: an AgentPlugin registered
    # with ``suite=<its name>`` (harness.plugins).
    # Declared: ``action_kind`` (one of :data:`ACTION_KINDS`), the kind of its env's gymnasium
    # action space; checked against the agent's ``action_kinds`` before a run (:func:`action_mismatch`).
    # Optional: ``success_at_stop = True`` where the goal may be met before the episode ends and
    # success is read when the agent stops (ALFRED's evaluation); otherwise ``info["success"]`` is
    # True only on the step that ends the episode (harness.check.invariants).


@dataclass(frozen=True)
class FailureClass:
    """One failure class a suite declares (``SuitePlugin.failure_classes``), or one of the
    core's generic classes (:data:`harness.scoring.failures.GENERIC_CLASSES`).

    ``harness table --by failure`` and the report's failure chart show classes in ``order``
    (ascending; the generic classes use 0-99 and 800-999, a suite's own 100-799), each with
    its ``label`` (one line) and always in its ``colour`` (a CSS colour, ``#rrggbb``)."""

    name: str
    label: str
    order: int = 500
    colour: str = "#9498a0"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a failure class needs a name, got {self.name!r}")
        if not (isinstance(self.colour, str) and len(self.colour) == 7 and self.colour.startswith("#")):
            raise ValueError(f"failure class {self.name!r}: colour must be '#rrggbb', got {self.colour!r}")


@dataclass(frozen=True)
class FailedEpisode:
    """What a suite's failure reader sees of one failed episode (from its stored record)."""

    suite: str
    #: ``[[action, feedback], ...]`` as stored (``extra["history"]``); empty: none stored.
    history: Sequence[Sequence[Any]]
    #: The task's facts (``extra["task"]``, written through :meth:`FailureRules.task_of`); None: unknown.
    task: Mapping[str, Any] | None
    task_type: str
    termination: str | None
    invalid_actions: int
    planner_output_errors: int
    gc_satisfied: int
    gc_total: int
    #: The record's whole ``extra`` (a suite may keep its own evidence there).
    extra: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class FailureRules(Protocol):
    """How ``harness table --by failure`` reads one suite's failed episodes, named by
    ``SuitePlugin.failures`` (``"module:attr"`` of an instance, a class or a factory taking no
    argument). The core applies its generic rules first (success, error, empty plan, output
    format: :mod:`harness.scoring.failures`); :meth:`classify` then names the suite's own class, or None
    to leave the episode to the generic ``out_of_steps`` / ``other`` / ``no_history``. Every class
    it returns is one the suite declares (``SuitePlugin.failure_classes``) or a generic one."""

    def task_of(self, metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The task facts the rules read, from an episode's metadata (None: none); the runner
        stores them in the record's ``extra["task"]``."""
        ...

    def classify(self, episode: FailedEpisode) -> str | None:
        """The class of a failed episode (not a success, not an error, not an empty plan, not
        unusable output), or None when none of the suite's rules applies."""
        ...


#: What an action is, as a suite's gymnasium action space declares it (envs/gym_registration.py):
#: ``text`` (spaces.Text: a skill or triplet string, or an id into the scene's action list),
#: ``continuous`` (spaces.Box: LIBERO's 7-D end-effector delta), ``discrete``
#: (spaces.MultiDiscrete: EB-Manipulation's 7 bins).
ACTION_KINDS: tuple[str, ...] = ("text", "continuous", "discrete")

_KIND_WORDS = {"text": "text actions (strings)", "continuous": "continuous action vectors",
               "discrete": "7-bin discrete actions"}


def action_mismatch(suite: Any, suite_name: str, agent: Any, agent_label: str) -> str | None:
    """One line saying why ``agent`` (a class or factory) cannot act on ``suite``, else None.

    Suites declare ``action_kind``; agents declare ``action_kinds`` (the kinds they produce). Either
    side undeclared (a third-party plugin) is not refused.
    """
    speaks = getattr(suite, "action_kind", None)
    produces = getattr(agent, "action_kinds", None)
    if speaks is None or produces is None or speaks in produces:
        return None
    made = " or ".join(_KIND_WORDS.get(k, k) for k in sorted(produces))
    hint = "a planner (planner=...)" if speaks == "text" else (
        "a policy (policy=...)" if speaks == "continuous" else "an agent that speaks it")
    return (f"{agent_label} cannot act on suite {suite_name}: its env takes {_KIND_WORDS.get(speaks, speaks)}, "
            f"the agent produces {made}; use {hint}")


class AgentContractError(ValueError):
    """Raised by ``env.step`` for an action that breaks the agent contract
    (NaN, wrong shape or type). The runner records an ``agent`` error naming
    the problem; the env is not stepped."""


@dataclass(frozen=True)
class InvalidOutput:
    """Model output that yields no action (unparseable text, an out-of-range first id).

    An agent puts it in :attr:`AgentReply.output_error` form, or passes it as
    the single action of a plan. EmbodiedBench's semantics: the env counts one
    invalid action and takes **no** env step, and the runner does **not** add
    it to the episode history (the next prompt is identical to this one); the
    record counts it in ``planner_output_errors`` when ``output_error`` is set.
    """

    raw: str
    reason: str
    #: Counted in ``planner_output_errors`` (EmbodiedBench's ``output_json_error``:
    #: the output could not be read). False for a readable plan that is invalid
    #: all the same (its first action id is out of range): an invalid action only.
    output_error: bool = True
    #: The env charges one env step instead of an invalid action (EmbodiedBench:
    #: a float / bool / NaN action id reaches the env, whose step raises after
    #: counting the step; the evaluator plans again). Never in the history.
    costs_step: bool = False


@dataclass
class AgentReply:
    """An agent's answer for one request, with the evidence behind it.

    ``actions`` are executed open-loop as a plain sequence would be. When
    ``output_error`` is set the output was unusable and the record counts a
    planner output error: with empty ``actions`` the runner steps the env with
    one :class:`InvalidOutput` (EmbodiedBench's EB-ALFRED rule); with actions,
    those are a fallback the agent chose (EB-Manipulation's original random
    action) and run as a plan. An empty ``actions`` without ``output_error`` is
    an empty plan (the episode ends).
    ``raw_output`` (the model's text) is kept with the episode's transcript;
    ``prompt`` only when the run records prompts.
    """

    actions: Sequence[Any] = ()
    raw_output: str | None = None
    output_error: str | None = None
    prompt: Any = None


#: What ``Agent.act`` returns per request: a plan / chunk, or an :class:`AgentReply`.
AgentOutput = Union[Sequence[Any], AgentReply]


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
    for a planner, an action chunk for a policy (a list / sequence, or an
    :class:`AgentReply` carrying the raw model output too). The runner executes
    them one ``env.step`` each until one fails (``info["action_ok"] is False``),
    the episode ends, or ``replan_steps`` actions ran, then asks again. An
    empty plan ends the episode (termination ``"empty_plan"``). Unparseable
    model output is an :class:`InvalidOutput` (see there), never an exception.

    Optional attributes the runner reads with defaults: ``reads_images``
    (True; False lets envs skip rendering), ``replan_steps`` (None: the
    whole plan / chunk; openpi clients use 5) and ``max_concurrent_calls`` (1:
    the pipelined runner makes one batched call at a time; N > 1: up to N calls
    of one request each at once, for clients of servers that batch themselves;
    ``act`` and ``reset`` must then be thread-safe across episodes). Declared on the class:
    ``action_kinds`` (a subset of :data:`ACTION_KINDS`), the actions it produces;
    a suite whose ``action_kind`` is not among them is refused before the run.
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

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentOutput]: ...


#: One model call's chat messages in the processor convention: ``[{"role": "user", "content":
#: [{"type": "image", "image": PIL.Image}, {"type": "text", "text": "..."}]}, ...]``.
Conversation = list[dict[str, Any]]


@dataclass(frozen=True)
class ModelFacts:
    """What a :class:`PromptAdapter` may know of the model it talks to (never the backend itself)."""

    #: The checkpoint path / served model name.
    name: str
    #: The reply's token limit: text longer than ``max_output_chars`` cannot come from the
    #: model, and a parser treats it as unusable.
    max_new_tokens: int
    max_output_chars: int
    #: The model family's values of settings left at ``auto`` (EmbodiedBench's per-family
    #: rules: ``parser``, ``output_template``); an adapter resolves its own ``auto`` with them.
    auto: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class PromptAdapter(Protocol):
    """How a model-backed planner speaks one suite: the suite's prompt, its output schema and
    its parser of the model's text. The planner owns the model; the adapter owns the words.

    A suite declares its factory in its plugin (``SuitePlugin.prompt``, called as
    ``factory(params, model)`` with its parsed ``prompt_params`` and a :class:`ModelFacts`).
    Per call, the planner asks :meth:`messages` for each request, sends the conversations
    of those that need the model at once, and hands each text back to :meth:`reply`::

        step = adapter.messages(request)        # a Conversation, or an AgentReply (no model call)
        text = model(step, schema=adapter.schema)
        reply = adapter.reply(request, text, step)

    An adapter keeps whatever it needs per episode between calls (earlier outputs in a chat
    layout, the plan being executed for grounded replanning), keyed by ``episode.key`` and
    cleared by :meth:`reset`; with a planner that serves requests concurrently
    (``max_concurrent_calls > 1``) calls for different episodes may interleave.
    """

    #: The output JSON schema (guided decoding / ``response_format`` where the planner turns
    #: it on); None: the suite's output has no schema.
    schema: Mapping[str, Any] | None

    def identity(self) -> Mapping[str, Any]:
        """Derived facts only (prompt and parser versions, digests of the examples in use,
        settings resolved from ``auto``); the declared settings enter the run identity already."""
        ...

    def reset(self, episode: EpisodeSpec) -> None: ...

    def messages(self, request: AgentRequest) -> Union[Conversation, AgentReply]:
        """The conversation of this request's model call, or the reply itself when no call is
        needed (a plan that ran to its end, a plan repaired without the model)."""
        ...

    def reply(self, request: AgentRequest, text: str, conversation: Conversation) -> AgentReply:
        """The model's ``text`` for ``conversation`` read as this request's reply (never raises
        on bad text: unusable output is an ``output_error``)."""
        ...
