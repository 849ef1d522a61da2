"""The shared episode runner.

It keeps many episodes in flight (one per executor slot), asks the agent for
the next plan / action chunk of *all* waiting episodes in one batched call, has
the executor run those actions, and commits each finished episode to the store
at once. Faults never crash a run and never drop an episode: a simulator
exception restarts the episode on a fresh env (up to ``max_retries`` times)
and then becomes an error record; an agent exception or a timeout becomes an
error record straight away.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from harness.executors import EnvFactory, Transition, make_executor
from harness.interfaces import Agent, AgentRequest, Suite
from harness.store import ResultStore
from harness.types import (
    INFO_EXPERT_LENGTH,
    INFO_GC_SATISFIED,
    INFO_GC_TOTAL,
    INFO_INVALID_ACTIONS,
    INFO_SUCCESS,
    INFO_TASK_TYPE,
    INFO_TERMINATION,
    SCHEMA_VERSION,
    TERMINATION_EMPTY_PLAN,
    EpisodeRecord,
    EpisodeSpec,
    RunSpec,
)


def run_identity(spec: RunSpec, suite: Suite, agent: Agent) -> dict[str, Any]:
    """What changes results. Worker counts, batch sizes and limits are left out."""
    return {
        "schema_version": SCHEMA_VERSION,
        "suite": suite.name,
        "suite_version": suite.version,
        "protocol": dict(suite.protocol(spec.split)),
        "split": spec.split,
        "agent": spec.agent,
        "agent_identity": dict(agent.identity()),
        "variant": spec.variant,
    }


def run_id_of(identity: dict[str, Any]) -> str:
    blob = json.dumps(identity, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def select_episodes(suite: Suite, spec: RunSpec) -> list[EpisodeSpec]:
    """The split's episodes in suite order, the run's seed offset applied, then the limit."""
    episodes = list(suite.episodes(spec.split))
    if spec.seed:
        episodes = [replace(e, seed=e.seed + spec.seed) for e in episodes]
    if spec.limit is not None:
        episodes = episodes[: spec.limit]
    return episodes


@dataclass
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


@dataclass
class RunSummary:
    run_id: str
    total: int
    skipped: int
    finished: int = 0
    successes: int = 0
    errors: int = 0
    records: list[EpisodeRecord] = field(default_factory=list)


class Runner:
    """Runs one :class:`RunSpec` against a suite with an agent.

    ``env_factory`` builds one env per executor slot (for the ``process``
    executor it must be picklable, e.g. :class:`harness.executors.SuiteEnvFactory`).
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
    ):
        self.spec, self.suite, self.agent, self.store = spec, suite, agent, store
        self.env_factory = env_factory or suite.make_env
        self.provenance = provenance or {}
        self.on_start, self.on_record = on_start, on_record
        self.identity = run_identity(spec, suite, agent)
        self.run_id = run_id_of(self.identity)
        self._writer: Any = None

    # ------------------------------------------------------------------
    def run(self) -> RunSummary:
        episodes = select_episodes(self.suite, self.spec)
        done: set = set()
        if self.store is not None:
            self.store.begin_run(self.run_id, self.spec, self.identity, self.provenance)
            done = self.store.completed_keys(self.run_id)
        todo = [e for e in episodes if e.key not in done]
        summary = RunSummary(self.run_id, total=len(episodes), skipped=len(episodes) - len(todo))
        if self.on_start:
            self.on_start(len(episodes), summary.skipped)
        if not todo:
            return summary
        executor = make_executor(
            self.spec.executor, self.env_factory,
            num_workers=self.spec.num_workers, batch_size=self.spec.batch_size,
        )
        self._writer = self.store.writer() if self.store is not None else None
        try:
            self._loop(executor, deque(_Live(e) for e in todo), summary)
        finally:
            executor.close()
            if self._writer is not None:
                self._writer.close()  # every finished episode committed before run() returns
        return summary

    # ------------------------------------------------------------------
    def _loop(self, executor: Any, pending: deque[_Live], summary: RunSummary) -> None:
        free = list(range(executor.capacity - 1, -1, -1))
        active: dict[int, _Live] = {}
        privileged = bool(getattr(self.agent, "privileged", False))
        timeout = self.spec.episode_timeout_s

        while pending or active:
            starting = []
            while pending and free:
                live = pending.popleft()
                live.started = time.monotonic()
                live.deadline = live.started + timeout if timeout else None
                starting.append((free.pop(), live))
            if starting:
                results = executor.reset([(slot, live.spec, privileged) for slot, live in starting])
                for (slot, live), tr in zip(starting, results):
                    if tr.error:
                        self._fault(executor, slot, live, tr, pending, free, summary)
                        continue
                    live.observation, live.info = tr.observation, tr.info
                    active[slot] = live
                    try:
                        self.agent.reset(live.spec)
                    except Exception as exc:
                        del active[slot]
                        self._finish(slot, live, free, summary, error=("agent", _describe(exc)))

            if not active:
                continue
            waiting = list(active.items())
            plans = self._decide([live for _, live in waiting])
            moves = []
            for (slot, live), plan in zip(waiting, plans):
                live.agent_calls += 1
                if isinstance(plan, BaseException):
                    del active[slot]
                    self._finish(slot, live, free, summary, error=("agent", _describe(plan)))
                elif not plan:
                    del active[slot]
                    self._finish(slot, live, free, summary, termination=TERMINATION_EMPTY_PLAN)
                else:
                    moves.append((slot, plan, live.deadline))
            if not moves:
                continue
            for (slot, _, deadline), tr in zip(moves, executor.advance(moves)):
                live = active[slot]
                if tr.steps:
                    live.steps += tr.steps
                    live.history += tr.history
                    live.observation, live.info = tr.observation, tr.info
                if tr.error:
                    del active[slot]
                    self._fault(executor, slot, live, tr, pending, free, summary)
                elif tr.done:
                    del active[slot]
                    self._finish(slot, live, free, summary)
                elif deadline is not None and time.monotonic() > deadline:
                    del active[slot]
                    self._finish(slot, live, free, summary, error=("timeout", "episode exceeded its wall-clock limit"))

    def _decide(self, lives: Sequence[_Live]) -> list[Any]:
        """One batched agent call; on failure, retry one by one to isolate the culprit."""
        requests = [AgentRequest(l.spec, l.observation, l.info, tuple(l.history)) for l in lives]
        try:
            plans = self.agent.act(requests)
            if len(plans) != len(requests):
                raise RuntimeError(f"agent returned {len(plans)} plans for {len(requests)} requests")
            return plans
        except Exception:
            return [_exc_or(lambda r=r: self.agent.act([r])[0]) for r in requests]

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
        info = live.info
        spec = live.spec
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
            gc_total=int(info.get(INFO_GC_TOTAL, 0) or 0),
            steps=live.steps,
            agent_calls=live.agent_calls,
            invalid_actions=int(info.get(INFO_INVALID_ACTIONS, 0) or 0),
            expert_length=info.get(INFO_EXPERT_LENGTH),
            wall_time_s=round(time.monotonic() - live.started, 6) if live.started else 0.0,
            termination=termination or info.get(INFO_TERMINATION),
            error_kind=error[0] if error else None,
            error_message=error[1] if error else None,
            attempts=live.attempts,
        )
        if self._writer is not None:
            self._writer.add(record)
        summary.finished += 1
        summary.successes += record.success
        summary.errors += record.error_kind is not None
        summary.records.append(record)
        if self.on_record:
            self.on_record(record)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _exc_or(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:
        return exc
