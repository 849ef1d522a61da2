"""The shared episode runner.

It keeps many episodes in flight (one per executor slot), asks the agent for
the next plan / action chunk of *all* waiting episodes in one batched call, has
the executor run those actions, and commits each finished episode to the store
within a quarter of a second (grouped; see ``RecordWriter``). Faults never
crash a run and never drop an episode: a simulator exception restarts the
episode on a fresh env (up to ``max_retries`` times) and then becomes an error
record; an agent exception or a timeout becomes an error record straight away.
"""

from __future__ import annotations

import functools
import hashlib
import json
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from harness.util import console
from harness.run import record_checks
from harness.run.allocator import keep_freed_heap
from harness.run.artifacts import FrameStore
from harness.run.executors import EnvFactory, Transition, make_executor
from harness.interfaces import Agent, AgentReply, AgentRequest, InvalidOutput, Suite
from harness.params import identity_of
from harness.values import ValueState, read_value
from harness.util.redact import redact
from harness.stats.sequential import identity_entry as sequential_identity
from harness.stats.sequential import ORDER_KEY as SEQUENTIAL_ORDER_KEY
from harness.util.spool import spool
from harness.store import ResultStore
from harness.types import (
    INFO_ARTIFACTS,
    INFO_EXPERT_LENGTH,
    INFO_GC_SATISFIED,
    INFO_GC_TOTAL,
    INFO_INVALID_ACTIONS,
    INFO_PATH_LENGTH,
    INFO_SUCCESS,
    INFO_TASK_TYPE,
    INFO_TERMINATION,
    IDENTITY_SCHEMA_VERSION,
    INFO_ANSWER,
    INFO_VALUES,
    SCHEMA_VERSION,
    TERMINATION_EMPTY_PLAN,
    EpisodeRecord,
    EpisodeSpec,
    LazyEpisodes,
    RunSpec,
)


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


#: Longest step history kept in a record's ``extra["history"]`` (ALFRED allows 1000 steps).
_MAX_KEPT_HISTORY = 1000


class AgentTimeout(Exception):
    """An agent call ran past ``agent_timeout_s`` (or the earliest episode deadline)."""


class _AgentCall(threading.Thread):
    """The daemon thread of one timed agent call; ``cancelled`` is set when the runner
    abandons it (see :func:`call_cancelled`)."""

    def __init__(self, target: Callable[[], None]):
        super().__init__(target=target, name="harness-agent-call", daemon=True)
        self.cancelled = threading.Event()


#: Agent calls abandoned after a timeout and maybe still running (see :func:`wait_for_abandoned`).
_abandoned: list[_AgentCall] = []


def call_cancelled() -> bool:
    """True inside an agent call the runner has abandoned (it timed out).

    A long computation in an agent (the hf backend's ``generate``) checks this,
    e.g. as a stopping criterion, and returns early: an abandoned call then
    stops using the CPU/GPU, and the process can exit cleanly while nothing is
    left inside torch.
    """
    thread = threading.current_thread()
    return isinstance(thread, _AgentCall) and thread.cancelled.is_set()


def wait_for_abandoned(timeout: float) -> bool:
    """Wait up to ``timeout`` s for abandoned agent calls to return; True when none is left running.

    A daemon thread still inside native code (torch) when the interpreter exits can abort the
    process ("terminate called without an active exception", status 134); the CLI calls this
    before exiting and, if one is left, ends the process without running native destructors.
    """
    end = time.monotonic() + timeout
    for thread in list(_abandoned):
        thread.join(max(0.0, end - time.monotonic()))
    _abandoned[:] = [t for t in _abandoned if t.is_alive()]
    return not _abandoned


def _call_with_timeout(fn: Callable[[], Any], timeout: float | None) -> Any:
    """``fn()``, or AgentTimeout after ``timeout`` seconds (None: no limit).

    The call runs on a daemon thread; one that hangs is abandoned (a thread
    cannot be killed): it is marked cancelled (:func:`call_cancelled`) and the
    run goes on without waiting for it.
    """
    if timeout is None:
        return fn()
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc
        finally:
            done.set()

    thread = _AgentCall(target)
    thread.start()
    if not done.wait(timeout):
        thread.cancelled.set()
        _abandoned.append(thread)
        raise AgentTimeout(f"agent call exceeded agent_timeout_s={timeout:g}")
    if "error" in box:
        raise box["error"]
    return box["value"]


#: What an agent's ``act`` must return per request (named in contract errors).
_CONTRACT = "act() must return one list of actions (or an AgentReply) per request"


def _check_plan(plan: Any) -> Any:
    """One agent output, checked: a list/tuple of actions as it is, else an
    AgentReply (other sequences, e.g. an action-chunk array, wrapped in one);
    TypeError names the contract."""
    if type(plan) is list or type(plan) is tuple:  # the common case, kept cheap
        return plan
    if isinstance(plan, AgentReply):
        actions = plan.actions
    else:
        actions = plan
    if isinstance(actions, (str, bytes)) or actions is None or not hasattr(actions, "__len__") \
            or not hasattr(actions, "__getitem__"):
        raise TypeError(f"{_CONTRACT}; got {type(actions).__name__}")
    if isinstance(plan, AgentReply):
        return plan
    return AgentReply(actions=actions)


@dataclass(slots=True)
class _Live:
    spec: EpisodeSpec
    attempts: int = 1
    started: float = 0.0
    deadline: float | None = None
    steps: int = 0
    agent_calls: int = 0
    observation: Any = None
    info: dict[str, Any] = field(default_factory=dict)
    history: list[tuple[Any, str]] = field(default_factory=list)
    output_errors: int = 0
    #: Plans of the agent's fallback actions (an output error that still brought actions).
    fallback_plans: int = 0
    transcript: list[dict[str, Any]] = field(default_factory=list)
    #: The agent's reset is still due (pipelined runner: it runs on the call's thread).
    needs_reset: bool = False


#: A run of at most this many episodes keeps its records in :attr:`RunSummary.records`
#: (tests and small scripts read them); a bigger one keeps counters only (memory stays flat).
KEEP_RECORDS_UP_TO = 1000


@dataclass
class RunSummary:
    """What one :meth:`Runner.run` did: counters, and the records themselves for small runs.

    ``records`` is None when the run had more than :data:`KEEP_RECORDS_UP_TO` episodes to
    run (or ``Runner(keep_records=False)``): every record is in the store, and a
    100,000-episode run must not hold them all in memory.
    """

    run_id: str
    total: int
    skipped: int
    finished: int = 0
    successes: int = 0
    errors: int = 0
    records: list[EpisodeRecord] | None = field(default_factory=list)


class Runner:
    """Runs one :class:`RunSpec` against a suite with an agent.

    ``env_factory`` builds one env per executor slot (for the ``process``
    executor it must be picklable, e.g. :class:`harness.run.executors.SuiteEnvFactory`).
    ``on_record`` is called as each record is handed to the store's writer
    (progress bars); all are committed before :meth:`run` returns.
    """

    def __init__(
        self,
        spec: RunSpec,
        suite: Suite,
        agent: Agent,
        store: ResultStore | None,
        *,
        env_factory: EnvFactory | None = None,
        provenance: dict[str, Any] | None = None,
        on_start: Callable[[int, int], None] | None = None,
        on_record: Callable[[EpisodeRecord], None] | None = None,
        on_call: Callable[[str, int, int | None], None] | None = None,
        artifacts_dir: str | Path | None = None,
        keep_records: bool | None = None,
    ):
        #: Keep records in the summary: None = only for runs of up to KEEP_RECORDS_UP_TO episodes.
        self.keep_records = keep_records
        self.spec, self.suite, self.agent, self.store = spec, suite, agent, store
        self.env_factory = env_factory or suite.make_env
        self.provenance = provenance or {}
        self.on_start, self.on_record = on_start, on_record
        #: Told of every agent call: ("started", requests, None) before it and ("finished",
        #: requests, output tokens or None) after it (also a call that raised, or one
        #: abandoned at a timeout); from the agent-call threads. It sees, it changes nothing.
        self.on_call = on_call
        self.identity = run_identity(spec, suite, agent)
        self.run_id = run_id_of(self.identity)
        self._writer: Any = None
        self._call_cost: tuple[float, int] = (0.0, 0)
        if artifacts_dir is None and store is not None:
            artifacts_dir = store.path.parent / "artifacts"
        #: Per-episode files of this run (videos) go under <artifacts>/<run_id>/, an absolute
        #: path (a worker process or a Ray actor may run in another working directory).
        self.artifacts_dir = str((Path(artifacts_dir) / self.run_id).resolve()) if artifacts_dir is not None else None
        #: The store's folder: artifact paths in records are relative to it (see _artifact_paths).
        self._store_dir = store.path.parent.resolve() if store is not None else None
        #: The frames each agent call saw (harness/run/artifacts.py), beside the store.
        self._frames = FrameStore(store.path.parent, spec.record_images) if store is not None else None
        self._replan = getattr(agent, "replan_steps", None)
        if self._replan is not None and int(self._replan) < 1:
            raise ValueError(f"agent replan_steps must be >= 1, got {self._replan}")

    @property
    def committed(self) -> int:
        """Records of this run committed to the store so far (also after an interrupt)."""
        return self._writer.committed if self._writer is not None else 0

    # ------------------------------------------------------------------
    #: Each episode's position in its split, kept in its record (``stopping=sequential`` only).
    _order: dict[tuple, int] | None = None

    def run(self) -> RunSummary:
        from harness.run.executors import refuse_in_worker_start

        refuse_in_worker_start("a run")
        done: set = set()
        if self.store is not None:
            # The split's episode count, so tables can say "1/50" (harness.tables.caveats); not hashed.
            provenance = {**self.provenance, "split_episodes": split_size(self.suite, self.spec.split)}
            self.store.begin_run(self.run_id, self.spec, self.identity, provenance)
            # A sequential comparison's stored records are final, errored ones too: the test may
            # have read them, and running an error again after that would let a flaky run try
            # again where it failed (harness/stats/sequential/). Any other run resumes what erred.
            done = (self.store.stored_keys(self.run_id) if self.spec.stopping
                    else self.store.completed_keys(self.run_id))
            # Third-party warnings of this run (harness.util.console, when the CLI routes them).
            if getattr(self.store, "path", None) is not None:
                console.log_to(console.run_log_path(self.store.path, self.run_id))
        total, todo_count, todo = plan_episodes(self.suite, self.spec, done)
        if self.spec.stopping:  # a sequential comparison reads its pairs in its order (harness/stats/sequential/)
            self._order = {e.key: i for i, e in enumerate(select_episodes(self.suite, self.spec))}
        keep = self.keep_records if self.keep_records is not None else todo_count <= KEEP_RECORDS_UP_TO
        summary = RunSummary(self.run_id, total=total, skipped=total - todo_count,
                             records=[] if keep else None)
        if self.on_start:
            self.on_start(total, summary.skipped)
        if not todo_count:
            return summary
        keep_freed_heap()  # envs rendering a frame per step, several in flight (see harness.run.allocator)
        executor = make_executor(
            self.spec.executor, self.env_factory,
            num_workers=self.spec.num_workers, batch_size=self.spec.batch_size,
            **({"envs_per_worker": self.spec.envs_per_worker} if self.spec.envs_per_worker != 1 else {}),
        )
        self._writer = self.store.writer() if self.store is not None else None
        try:
            # An executor without the pipelined interface (a third party's) runs lockstep, and so
            # does one episode in flight: with nothing beside it, there is nothing to overlap.
            pipelined = self.spec.pipeline and hasattr(executor, "start") and executor.capacity > 1
            (self._pipeline if pipelined else self._loop)(executor, todo, summary)
        finally:
            try:
                if self._writer is not None:
                    self._writer.close()  # every finished episode committed before run() returns
            finally:
                executor.close()
        return summary

    # ------------------------------------------------------------------
    def _take(self, free: list[int], pending: deque[_Live], fresh: Iterator[EpisodeSpec]) -> tuple[list, bool]:
        """Episodes for the free slots (retries first): ([(slot, live)], fresh exhausted)."""
        starting = []
        while free:
            if pending:
                live = pending.popleft()
            else:
                spec = next(fresh, None)
                if spec is None:
                    return starting, True
                live = _Live(spec)
            live.started = time.monotonic()
            starting.append((free.pop(), live))
        return starting, False

    def _reset_options(self) -> dict[str, Any]:
        return {
            "privileged": bool(getattr(self.agent, "privileged", False)),
            "render": bool(getattr(self.agent, "reads_images", True)),
            "artifacts_dir": self.artifacts_dir,
        }

    def _started(self, executor: Any, slot: int, live: _Live, tr: Transition, pending: deque[_Live],
                 free: list[int], summary: RunSummary) -> bool:
        """A reset's result: True when the episode is under way (else it faulted)."""
        if tr.error:
            self._fault(executor, slot, live, tr, pending, free, summary)
            return False
        live.observation, live.info = tr.observation, tr.info
        # The wall-clock limit runs from the end of the reset (a worker's start-up and
        # the scene's load are not the agent's time); agent calls and steps count.
        timeout = self.spec.episode_timeout_s
        live.deadline = time.monotonic() + timeout if timeout else None
        return True

    def _agent_reset(self, live: _Live) -> BaseException | None:
        try:
            self.agent.reset(live.spec)
        except _AGENT_ERRORS as exc:
            return _agent_error(exc)
        return None

    def _moves(self, served: list[tuple[int, _Live]], plans: list[Any], free: list[int],
               summary: RunSummary) -> tuple[list[tuple], list[int], list[int]]:
        """One call's plans -> ``(moves, again, ended)``: the executor's moves, the slots whose
        call was abandoned at another episode's deadline (to be asked again), and the slots
        whose episode ended here (its record written)."""
        moves: list[tuple] = []
        again: list[int] = []
        ended: list[int] = []
        for (slot, live), plan in zip(served, plans):
            if plan is _AGAIN:
                again.append(slot)
            elif isinstance(plan, _ResetFailed):
                self._finish(slot, live, free, summary, error=("agent", _describe(plan.error)))
                ended.append(slot)
            elif (move := self._move(slot, live, plan, free, summary)) is None:
                ended.append(slot)
            else:
                moves.append(move)
        return moves, again, ended

    def _move(self, slot: int, live: _Live, plan: Any, free: list[int], summary: RunSummary) -> tuple | None:
        """A checked plan -> the executor's move ``(slot, actions, deadline)``, or None when it
        ended the episode (an exception, an empty plan: the record is written here)."""
        live.agent_calls += 1
        if type(plan) is list or type(plan) is tuple:  # the common case, kept cheap
            actions = plan
        elif isinstance(plan, AgentReply):
            if plan.raw_output is not None or plan.output_error is not None:
                live.transcript.append(self._transcript_entry(live, plan))
            actions = plan.actions
            if plan.output_error is not None:
                if not len(actions):  # one invalid action, no step, no history (counted in drive)
                    return (slot, [InvalidOutput(plan.raw_output or "", plan.output_error)], live.deadline)
                live.output_errors += 1  # the agent's fallback actions run as a plan
                live.fallback_plans += 1
        else:  # an exception instead of a plan
            # A call that passed its own wall-clock limit (a backend's TimeoutError) is a timeout too.
            kind = "timeout" if isinstance(plan, (AgentTimeout, TimeoutError)) else "agent"
            self._finish(slot, live, free, summary, error=(kind, _describe(plan)))
            return None
        if not len(actions):
            self._finish(slot, live, free, summary, termination=TERMINATION_EMPTY_PLAN)
            return None
        if self._replan is not None:
            actions = actions[: self._replan]
        return (slot, actions, live.deadline)

    def _stepped(self, executor: Any, slot: int, live: _Live, deadline: float | None, tr: Transition,
                 pending: deque[_Live], free: list[int], summary: RunSummary) -> bool:
        """A run of actions' result: True when the episode goes on (else its record is written)."""
        if tr.info is not None:  # something was stepped (an InvalidOutput too)
            live.output_errors += tr.invalid_outputs
            live.steps += tr.steps
            live.history += tr.history
            live.observation, live.info = tr.observation, tr.info
        if tr.error:
            self._fault(executor, slot, live, tr, pending, free, summary)
        elif tr.done:
            self._finish(slot, live, free, summary)
        elif deadline is not None and time.monotonic() > deadline:
            self._finish(slot, live, free, summary, error=("timeout", "episode exceeded its wall-clock limit"))
        else:
            return True
        return False

    def _loop(self, executor: Any, fresh: Iterator[EpisodeSpec], summary: RunSummary) -> None:
        """Lockstep (``runner.pipeline=false``): one agent call for every waiting episode,
        then every env advances; neither side works while the other does."""
        # Episodes are taken from ``fresh`` only as slots free up (a lazy split is built as it
        # runs); ``pending`` holds retries, which go first.
        pending: deque[_Live] = deque()
        free = list(range(executor.capacity - 1, -1, -1))
        active: dict[int, _Live] = {}
        options = self._reset_options()
        exhausted = False
        while pending or active or not exhausted:
            if free and (pending or not exhausted):
                starting, done = self._take(free, pending, fresh)
                exhausted = exhausted or done
                if starting:
                    results = executor.reset([(slot, {**options, "episode": live.spec}) for slot, live in starting])
                    for (slot, live), tr in zip(starting, results):
                        if self._started(executor, slot, live, tr, pending, free, summary):
                            error = self._agent_reset(live)
                            if error is None:
                                active[slot] = live
                            else:
                                self._finish(slot, live, free, summary, error=("agent", _describe(error)))
            if not active:
                continue
            if self._writer is not None:
                self._writer.check()  # a failed commit (disk full) ends the run here
            waiting = list(active.items())
            started = time.monotonic()
            plans = self._decide([live for _, live in waiting])
            self._call_cost = (time.monotonic() - started, len(waiting))
            moves, _, ended = self._moves(waiting, plans, free, summary)  # an abandoned call: asked next round
            for slot in ended:
                del active[slot]
            if not moves:
                continue
            for (slot, _, deadline), tr in zip(moves, executor.advance(moves)):
                if not self._stepped(executor, slot, active[slot], deadline, tr, pending, free, summary):
                    del active[slot]

    def _pipeline(self, executor: Any, fresh: Iterator[EpisodeSpec], summary: RunSummary) -> None:
        """Pipelined (the default): the agent answers the episodes that are ready while the
        executor steps the others.

        Each episode alternates between the two sides; nothing waits for a round. The
        agent gets the ready requests (up to ``batch_size`` per call, waiting at most
        ``batch_wait_s`` for a call to fill while envs are still stepping); an agent that
        declares ``max_concurrent_calls`` > 1 (a server's client) gets one request per call,
        each as soon as it is ready, that many calls at once. An episode's
        record does not depend on what ran beside it: its env, its seed and its requests
        are its own (tests/harness/test_pipeline.py compares with lockstep on every suite).
        """
        events: queue.SimpleQueue[tuple] = queue.SimpleQueue()
        executor.start(lambda slot, tr: events.put((slot, tr)))
        concurrency = max(1, int(getattr(self.agent, "max_concurrent_calls", 1) or 1))
        # An agent taking concurrent calls (a server's client) gets each request on its own,
        # as soon as it is ready: a server batching continuously needs no batch from us.
        per_call = 1 if concurrency > 1 else max(1, self.spec.batch_size)
        wait_s = max(0.0, float(self.spec.batch_wait_s))
        calls = _CallPool(concurrency, self._serve_call, events)
        work = getattr(executor, "run_pending", None)  # envs stepped on this thread (local)
        pending: deque[_Live] = deque()
        free = list(range(executor.capacity - 1, -1, -1))
        live_at: dict[int, _Live] = {}  # every slot with an episode, wherever it is
        steps_of: dict[int, float | None] = {}  # slots stepping: their deadline; absent: resetting
        ready: deque[int] = deque()  # slots waiting for the agent, in the order they got ready
        in_env = 0  # slots with an env operation in flight
        options = self._reset_options()
        exhausted = False
        filling_since: float | None = None
        try:
            while True:
                if free and (pending or not exhausted):
                    starting, done = self._take(free, pending, fresh)
                    exhausted = exhausted or done
                    if starting:
                        for slot, live in starting:
                            live_at[slot] = live
                            live.needs_reset = True
                        in_env += len(starting)
                        executor.submit_reset([(slot, {**options, "episode": live.spec}) for slot, live in starting])
                if not live_at and exhausted and not pending:
                    return
                if self._writer is not None:
                    self._writer.check()  # a failed commit (disk full) ends the run here
                # The agent's side: a call per free call slot, as full as the wait allows.
                timeout = None
                while ready and calls.idle:
                    if len(ready) < per_call and in_env and wait_s:
                        now = time.monotonic()
                        filling_since = filling_since or now
                        if now - filling_since < wait_s:
                            timeout = filling_since + wait_s - now
                            break
                    filling_since = None
                    batch = [ready.popleft() for _ in range(min(per_call, len(ready)))]
                    calls.submit([(slot, live_at[slot]) for slot in batch])
                event = _next_event(events, work, timeout)
                if event is None:
                    continue
                while True:  # everything that arrived, before deciding the next calls
                    if event[0] is _CALL_DONE:
                        _, served, plans, cost = event
                        calls.done()
                        self._call_cost = cost
                        moves, again, ended = self._moves(served, plans, free, summary)
                        ready.extend(again)
                        for slot in ended:
                            del live_at[slot]
                        for slot, _, deadline in moves:
                            steps_of[slot] = deadline
                        if moves:
                            in_env += len(moves)
                            executor.submit_advance(moves)
                    elif event[0] is _CALL_FAILED:
                        raise event[1]
                    else:
                        slot, tr = event
                        in_env -= 1
                        live = live_at[slot]
                        if slot in steps_of:
                            goes_on = self._stepped(executor, slot, live, steps_of.pop(slot), tr, pending, free, summary)
                        else:
                            goes_on = self._started(executor, slot, live, tr, pending, free, summary)
                        if goes_on:
                            ready.append(slot)
                        else:
                            del live_at[slot]
                    try:
                        event = events.get_nowait()
                    except queue.Empty:
                        break
        finally:
            calls.close()

    def _serve_call(self, served: list[tuple[int, _Live]]) -> tuple[list[Any], tuple[float, int]]:
        """On an agent-call thread: the agent's reset of episodes starting, then one call."""
        started = time.monotonic()
        plans: list[Any] = [None] * len(served)
        asking = []
        for i, (_, live) in enumerate(served):
            if live.needs_reset:
                live.needs_reset = False
                error = self._agent_reset(live)
                if error is not None:
                    plans[i] = _ResetFailed(error)
                    continue
            asking.append(i)
        if asking:
            for i, plan in zip(asking, self._decide([served[i][1] for i in asking])):
                plans[i] = plan
        return plans, (time.monotonic() - started, len(asking))

    def _decide(self, lives: Sequence[_Live]) -> list[Any]:
        """One batched agent call -> a checked plan (list or AgentReply) or an exception per episode.

        An exception from the batch is retried one request at a time to isolate
        the culprit; a timeout or a broken contract (wrong number of plans, a
        plan that is not a list of actions) is not retried: it is reported for
        the episodes concerned.
        """
        requests = [AgentRequest(l.spec, l.observation, l.info, tuple(l.history)) for l in lives]
        limit, by_deadline = self._call_limit(lives)
        if by_deadline and limit == 0:  # a deadline already passed: no call to abandon
            return self._timed_out(lives)
        try:
            plans = self._act(requests, limit)
        except AgentTimeout as exc:
            return self._timed_out(lives) if by_deadline else [exc] * len(requests)
        except _AGENT_ERRORS:
            plans = []
            for live, r in zip(lives, requests):
                limit, by_deadline = self._call_limit([live])
                try:
                    plans.append(_one(self._act([r], limit)))
                except AgentTimeout as exc:
                    plans += self._timed_out([live]) if by_deadline else [exc]
                except _AGENT_ERRORS as exc:  # noqa: BLE001 - an error record
                    plans.append(_agent_error(exc))
            return [p if isinstance(p, BaseException) or p is _AGAIN else _checked(p) for p in plans]
        if not isinstance(plans, (list, tuple)) or len(plans) != len(requests):
            got = f"{len(plans)} plans" if isinstance(plans, (list, tuple)) else type(plans).__name__
            error = TypeError(f"{_CONTRACT}: got {got} for {len(requests)} requests")
            return [error] * len(requests)
        return [_checked(p) for p in plans]

    def _act(self, requests: list[AgentRequest], limit: float | None) -> Any:
        """One agent call within ``limit`` seconds, told to ``on_call`` as it starts and ends."""
        if self.on_call is None:
            return _call_with_timeout(lambda: self.agent.act(requests), limit)
        self.on_call("started", len(requests), None)
        plans = None
        try:
            plans = _call_with_timeout(lambda: self.agent.act(requests), limit)
            return plans
        finally:
            self.on_call("finished", len(requests), _output_tokens(plans))

    def _call_limit(self, lives: Sequence[_Live]) -> tuple[float | None, bool]:
        """How long the next agent call may take: ``agent_timeout_s`` or, when sooner, the
        earliest deadline of the episodes it serves (then True): a hung agent ends there."""
        limit = self.spec.agent_timeout_s
        deadlines = [l.deadline for l in lives if l.deadline is not None]
        if deadlines:
            left = max(0.0, min(deadlines) - time.monotonic())
            if limit is None or left < limit:
                return left, True
        return limit, False

    def _timed_out(self, lives: Sequence[_Live]) -> list[Any]:
        """After a call abandoned at an episode deadline: a timeout for each episode past its
        deadline; the others (later deadlines) are asked again in the next round."""
        now = time.monotonic()
        return [AgentTimeout(f"episode exceeded its wall-clock limit (episode_timeout_s="
                             f"{self.spec.episode_timeout_s:g}) while the agent was deciding")
                if l.deadline is not None and now >= l.deadline - 1e-3 else _AGAIN for l in lives]

    def _transcript_entry(self, live: _Live, reply: AgentReply) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "call": live.agent_calls - 1,
            "step": live.steps,
            "raw_output": reply.raw_output,
            "output_error": reply.output_error,
            "actions": len(reply.actions),
        }
        if self.spec.record_prompts and reply.prompt is not None:
            entry["prompt"] = reply.prompt
        # Cost: the batched call's wall time (shared by its `batch` episodes) and, where the
        # backend counted them, the tokens (planners/vlm/backends.py: a str with .usage).
        entry["latency_s"], entry["batch"] = round(self._call_cost[0], 4), self._call_cost[1]
        usage = getattr(reply.raw_output, "usage", None)
        if isinstance(usage, Mapping):
            entry.update({k: int(v) for k, v in usage.items() if k in ("prompt_tokens", "output_tokens")})
        if getattr(reply.raw_output, "output_truncated", False) is True:
            # The backend kept only a prefix of the model's reply (openai: max_reply_chars).
            entry["output_truncated"] = True
        if self._frames is not None and self._frames.enabled:
            images = self._frames.save_observation(live.observation)
            if images:
                entry["images"] = images
        # A long reply waits on disk until the episode is stored (harness/util/spool.py): a live
        # episode holds at most SPOOL_CHARS characters per call, whatever the model answers.
        entry["raw_output"] = spool(entry["raw_output"])
        if "prompt" in entry:
            entry["prompt"] = spool(entry["prompt"])
        return entry

    def _artifact_paths(self, artifacts: Mapping[str, Any]) -> dict[str, Any]:
        """An env's artifact paths as the record keeps them: relative to the store's folder
        (POSIX separators) when the file lies inside it, so the store and its files move
        together and a report finds them whatever the working directory was; other paths
        (outside the store, or no store) stay as the env gave them, made absolute."""
        out: dict[str, Any] = {}
        for name, value in artifacts.items():
            if not isinstance(value, (str, Path)):
                out[name] = value
                continue
            path = Path(value)
            if not path.is_absolute():  # relative to this process's working directory
                path = Path.cwd() / path
            path = path.resolve()
            if self._store_dir is not None and path.is_relative_to(self._store_dir):
                out[name] = path.relative_to(self._store_dir).as_posix()
            else:
                out[name] = str(path)
        return out

    def _fault(self, executor: Any, slot: int, live: _Live, tr: Transition,
               pending: deque[_Live], free: list[int], summary: RunSummary) -> None:
        kind, message = tr.error  # type: ignore[misc]
        executor.discard(slot)
        if kind in ("env", "worker") and live.attempts <= self.spec.max_retries:
            free.append(slot)
            pending.appendleft(_Live(live.spec, attempts=live.attempts + 1))
            return
        self._finish(slot, live, free, summary, error=(kind, message))

    def _finish(self, slot: int, live: _Live, free: list[int], summary: RunSummary, *,
                termination: str | None = None, error: tuple[str, str] | None = None) -> None:
        free.append(slot)
        info = live.info or {}
        spec = live.spec
        gc_total = info.get(INFO_GC_TOTAL)
        if gc_total is None:  # e.g. an error at reset: the task's count, where the suite knows it
            gc_total = spec.metadata.get("gc_total", 0)
        extra: dict[str, Any] = {}
        history = live.history
        if history and len(history) <= _MAX_KEPT_HISTORY and all(
                type(a) is str or type(a) is int for a, _ in history):
            # Text actions (skills, ids) and their feedback: the evidence failure
            # analyses and episode browsers read. Numeric action chunks are not kept.
            extra["history"] = [[a, f] for a, f in history]
        elif history and len(history) <= _MAX_KEPT_HISTORY:
            actions = _rounded_actions(a for a, _ in history)
            if actions is not None:  # a policy's continuous actions, per step, for the episode browser
                extra["actions"] = actions
        if info.get(INFO_ARTIFACTS):
            extra["artifacts"] = self._artifact_paths(info[INFO_ARTIFACTS])
        task = _task_facts(spec)  # the suite's own reader of its task facts, for failure analysis
        if task:
            extra["task"] = task
        if spec.instruction:  # shown by the report's episode browser
            extra["instruction"] = spec.instruction
        if self._order is not None and spec.key in self._order:
            extra[SEQUENTIAL_ORDER_KEY] = self._order[spec.key]
        cut = sum(1 for t in live.transcript if t.get("output_truncated"))
        if cut:  # replies the backend kept only a prefix of (their transcript entries say which)
            extra["outputs_truncated"] = cut
        if live.fallback_plans:  # plans of fallback actions (also counted in planner_output_errors)
            extra["fallback_plans"] = live.fallback_plans
        if info.get(INFO_ANSWER) is not None:  # a one-step episode's answer text
            extra["answer"] = str(info[INFO_ANSWER])
        breakdown = _breakdown_of(spec)  # the suite's further --by fields (SuitePlugin.breakdowns)
        if breakdown:
            extra["breakdown"] = breakdown
        values, undelivered = _episode_values(info.get(INFO_VALUES))
        record = EpisodeRecord(
            run_id=self.run_id,
            variant=self.spec.variant,
            suite=spec.suite,
            split=spec.split,
            episode_id=spec.episode_id,
            seed=spec.seed,
            task_type=info.get(INFO_TASK_TYPE) or spec.metadata.get("task_type"),
            success=bool(info.get(INFO_SUCCESS, False)) and error is None,
            gc_satisfied=int(info.get(INFO_GC_SATISFIED, 0) or 0),
            gc_total=int(gc_total or 0),
            steps=live.steps,
            agent_calls=live.agent_calls,
            invalid_actions=int(info.get(INFO_INVALID_ACTIONS, 0) or 0),
            expert_length=info.get(INFO_EXPERT_LENGTH),
            wall_time_s=round(time.monotonic() - live.started, 6) if live.started else 0.0,
            termination=termination or info.get(INFO_TERMINATION),
            error_kind=error[0] if error else None,
            error_message=error[1] if error else None,
            attempts=live.attempts,
            planner_output_errors=live.output_errors,
            empty_plan=termination == TERMINATION_EMPTY_PLAN,
            path_length=None if info.get(INFO_PATH_LENGTH) is None else int(info[INFO_PATH_LENGTH]),
            extra=extra,
            values=values,
        )
        if error is None:  # what the suite declares, enforced where the record is made
            problems, keys = record_checks.problems_of(record, undelivered)
            if problems:
                record = record_checks.as_error(record, problems, keys)
        if self._writer is not None:
            self._writer.add(record, live.transcript)
        summary.finished += 1
        summary.successes += record.success
        summary.errors += record.error_kind is not None
        if summary.records is not None:
            summary.records.append(record)
        if self.on_record:
            self.on_record(record)


#: A plan's place when the call serving it was abandoned before its own deadline: ask again.
_AGAIN = object()
#: Events of the pipelined runner's agent-call threads (beside the executor's (slot, Transition)).
_CALL_DONE = object()
_CALL_FAILED = object()


def _next_event(events: "queue.SimpleQueue[tuple]", work: Callable[[], bool] | None,
                timeout: float | None) -> tuple | None:
    """The next event; while none has come, the executor's queued env work is done here.
    None when ``timeout`` passed without one."""
    while True:
        try:
            return events.get_nowait()
        except queue.Empty:
            pass
        if work is None or not work():
            try:
                return events.get(timeout=timeout)
            except queue.Empty:
                return None


@dataclass(frozen=True, slots=True)
class _ResetFailed:
    """In place of a plan: the agent's reset of that episode raised (no call was made for it)."""

    error: BaseException


class _CallPool:
    """``size`` daemon threads making the pipelined runner's agent calls.

    Each takes a batch of ``(slot, live)``, runs ``serve`` on it and puts
    ``(_CALL_DONE, batch, plans, cost)`` on ``events``. The threads are
    :class:`_AgentCall` threads: one still inside a call when the run ends (an
    interrupt) is marked cancelled (:func:`call_cancelled`) and left to
    :func:`wait_for_abandoned`, as a timed-out call is.

    A cheap agent (one call at a time, its recent calls shorter than
    :data:`INLINE_BELOW_S` on average: an oracle, a rule) is called on the runner's
    own thread instead: there is nothing to overlap, and the hand-off to a thread
    and back would cost more than the call.
    """

    def __init__(self, size: int, serve: Callable[[list], tuple], events: "queue.SimpleQueue[tuple]"):
        self._size, self._busy = size, 0
        self._serve, self._events = serve, events
        self._mean: float | None = None  # recent calls' mean duration (one call at a time only)
        self._jobs: queue.SimpleQueue[list | None] = queue.SimpleQueue()
        self._running: set[Any] = set()
        self._threads = [_AgentCall(self._work) for _ in range(size)]
        for thread in self._threads:
            thread.start()

    @property
    def idle(self) -> bool:
        """A thread is free for another call."""
        return self._busy < self._size

    def submit(self, batch: list) -> None:
        self._busy += 1
        if self._size == 1 and self._mean is not None and self._mean < INLINE_BELOW_S:
            self._call(batch)
        else:
            self._jobs.put(batch)

    def done(self) -> None:
        self._busy -= 1

    def _call(self, batch: list) -> None:
        try:
            plans, cost = self._serve(batch)
        except BaseException as exc:  # noqa: BLE001 - a bug of the runner's: re-raised there
            self._events.put((_CALL_FAILED, exc))
            return
        if self._size == 1:
            self._mean = cost[0] if self._mean is None else 0.8 * self._mean + 0.2 * cost[0]
        self._events.put((_CALL_DONE, batch, plans, cost))

    def _work(self) -> None:
        thread = threading.current_thread()
        while True:
            batch = self._jobs.get()
            if batch is None:
                return
            self._running.add(thread)
            try:
                self._call(batch)
            finally:
                self._running.discard(thread)

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)
        for thread in list(self._running):  # still inside a call: the run ended under it
            thread.cancelled.set()
            _abandoned.append(thread)


#: Pipelined runner: an agent whose calls take less than this on average (and that takes
#: one call at a time) is called on the runner's thread (see :class:`_CallPool`).
INLINE_BELOW_S = 0.002


#: What an agent call may raise that becomes an error record. SystemExit too: an agent
#: (or a library inside it) calling sys.exit() must not end the run silently.
_AGENT_ERRORS = (Exception, SystemExit)


def _agent_error(exc: BaseException) -> BaseException:
    """``exc`` as an error-record exception (a SystemExit becomes a RuntimeError naming it)."""
    if isinstance(exc, SystemExit):
        return RuntimeError(f"the agent called sys.exit({exc.code!r})")
    return exc


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


#: Decimals the executed continuous actions keep in a record (``extra["actions"]``).
ACTION_DECIMALS = 3


def _episode_values(values: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``info["values"]`` as a record keeps it -- names to JSON numbers or None -- and the values
    the env did not deliver, each name to what the env gave (both read by the one rule,
    :func:`harness.values.read_value`): a value not delivered (NaN, an infinity, text) is kept
    as None, and where a declared metric reads it :func:`harness.run.record_checks.problems_of`
    makes the episode an error record naming it."""
    if not isinstance(values, Mapping):
        return {}, {}
    out: dict[str, Any] = {}
    undelivered: dict[str, Any] = {}
    for name, x in values.items():
        state, f = read_value(x)
        if state is not ValueState.VALUE:  # None, or not delivered: no number stored
            out[str(name)] = None
            if state is not ValueState.MISSING:
                undelivered[str(name)] = x
        elif isinstance(x, bool):
            out[str(name)] = int(x)
        else:
            out[str(name)] = int(f) if f.is_integer() and isinstance(x, int) else f
    return out, undelivered


def _rounded_actions(actions: Iterator[Any]) -> list[list[float]] | None:
    """Each executed action as a flat list of numbers rounded to :data:`ACTION_DECIMALS`
    (a policy's 7-D end-effector delta and gripper, say): compact evidence for the episode
    browser; None when an action is not a finite numeric vector."""
    import numpy as np

    out = []
    for action in actions:
        try:
            arr = np.asarray(action, dtype=float).ravel()
        except (TypeError, ValueError):
            return None
        if not arr.size or not np.isfinite(arr).all():
            return None
        out.append([round(float(x), ACTION_DECIMALS) + 0.0 for x in arr])
    return out


def _output_tokens(plans: Any) -> int | None:
    """The output tokens a call's replies report (``raw_output.usage``, as model backends
    give them), summed; None when no reply reports any."""
    total = None
    for plan in plans if isinstance(plans, (list, tuple)) else ():
        usage = getattr(getattr(plan, "raw_output", None), "usage", None) if isinstance(plan, AgentReply) else None
        if isinstance(usage, Mapping) and usage.get("output_tokens") is not None:
            total = (total or 0) + int(usage["output_tokens"])
    return total


def _one(plans: Any) -> Any:
    """The single plan of a one-request call (contract checked)."""
    if not isinstance(plans, (list, tuple)) or len(plans) != 1:
        raise TypeError(f"{_CONTRACT}: got {len(plans) if isinstance(plans, (list, tuple)) else type(plans).__name__} for 1 request")
    return plans[0]


def _checked(plan: Any) -> Any:
    try:
        return _check_plan(plan)
    except TypeError as exc:
        return exc


def _breakdown_of(spec: EpisodeSpec) -> dict[str, str] | None:
    """The values of the breakdowns the episode's suite declares (``SuitePlugin.breakdowns``),
    read from its metadata; None: it declares none (or is not registered here)."""
    names = _breakdowns_declared(str(spec.suite))
    out = {n: str(spec.metadata[n]) for n in names if spec.metadata.get(n) is not None}
    return out or None


@functools.lru_cache(maxsize=None)
def _breakdowns_declared(suite: str) -> tuple[str, ...]:
    from harness.registry.catalog import SUITES

    try:
        return tuple(getattr(SUITES.entry(suite), "breakdowns", ()) or ())
    except Exception:  # noqa: BLE001 - a suite not registered here declares none
        return ()


def _task_facts(spec: EpisodeSpec) -> dict[str, Any] | None:
    """The episode's task facts as its suite's failure reader reads them from its metadata
    (:meth:`harness.interfaces.FailureRules.task_of`); None: the suite has no reader, or it
    reads none. A reader that fails gives none (the record is still written)."""
    from harness.scoring.failures import rules_for

    try:
        rules = rules_for(str(spec.suite))
        reader = getattr(rules, "task_of", None)
        task = reader(spec.metadata) if reader is not None else None
        return dict(task) if task else None
    except Exception:  # noqa: BLE001 - evidence for failure analysis only; never lose the record
        return None

