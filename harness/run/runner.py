"""The shared episode runner.

It keeps many episodes in flight (one per executor slot), asks the agent for
the next plan / action chunk of *all* waiting episodes in one batched call, has
the executor run those actions, and commits each finished episode to the store
within a quarter of a second (grouped; see ``RecordWriter``). Faults never
crash a run and never drop an episode: a simulator exception restarts the
episode on a fresh env (up to ``max_retries`` times) and then becomes an error
record; an agent exception or a timeout becomes an error record straight away.

The runner schedules the two sides; its collaborators do the rest: the agent's calls
(:mod:`harness.run.calls`), the episodes on the executor's slots
(:mod:`harness.run.episodes`), their records (:mod:`harness.run.records`), and the
run's identity and episode selection (:mod:`harness.run.identity`).
"""

from __future__ import annotations

import queue
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable, Iterator

from harness.interfaces import Agent, Suite
from harness.run.allocator import keep_freed_heap
from harness.run.artifacts import FrameStore
from harness.run.calls import CALL_DONE, CALL_FAILED, AgentCaller, CallPool, next_event
from harness.run.episodes import Episodes, RunSummary
from harness.run.executors import EnvFactory, make_executor, refuse_in_worker_start
from harness.run.identity import plan_episodes, run_id_of, run_identity, select_episodes, split_size
from harness.run.records import LiveEpisode, RecordMaker, describe
from harness.store.database import ResultStore
from harness.types import EpisodeRecord, EpisodeSpec, RunSpec
from harness.util import console

#: A run of at most this many episodes keeps its records in :attr:`RunSummary.records`
#: (tests and small scripts read them); a bigger one keeps counters only (memory stays flat).
KEEP_RECORDS_UP_TO = 1000


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
        if artifacts_dir is None and store is not None:
            artifacts_dir = store.path.parent / "artifacts"
        #: Per-episode files of this run (videos) go under <artifacts>/<run_id>/, an absolute
        #: path (a worker process or a Ray actor may run in another working directory).
        self.artifacts_dir = str((Path(artifacts_dir) / self.run_id).resolve()) if artifacts_dir is not None else None
        #: The store's folder: artifact paths in records are relative to it (see RecordMaker.artifact_paths).
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
    def run(self) -> RunSummary:
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
        # Each episode's position in its split, kept in its record (``stopping=sequential`` only).
        order = None
        if self.spec.stopping:  # a sequential comparison reads its pairs in its order (harness/stats/sequential/)
            order = {e.key: i for i, e in enumerate(select_episodes(self.suite, self.spec))}
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
            records = RecordMaker(self.run_id, self.spec, store_dir=self._store_dir, frames=self._frames, order=order)
            episodes = Episodes(self.spec, executor, records, summary, writer=self._writer,
                                on_record=self.on_record, replan=self._replan)
            calls = AgentCaller(self.agent, self.spec, self.on_call)
            (self._pipeline if pipelined else self._loop)(episodes, calls, todo)
        finally:
            try:
                if self._writer is not None:
                    self._writer.close()  # every finished episode committed before run() returns
            finally:
                executor.close()
        return summary

    # ------------------------------------------------------------------
    def _reset_options(self) -> dict[str, Any]:
        return {
            "privileged": bool(getattr(self.agent, "privileged", False)),
            "render": bool(getattr(self.agent, "reads_images", True)),
            "artifacts_dir": self.artifacts_dir,
        }

    def _loop(self, episodes: Episodes, calls: AgentCaller, fresh: Iterator[EpisodeSpec]) -> None:
        """Lockstep (``runner.pipeline=false``): one agent call for every waiting episode,
        then every env advances; neither side works while the other does."""
        # Episodes are taken from ``fresh`` only as slots free up (a lazy split is built as it
        # runs); ``pending`` holds retries, which go first.
        executor, pending, free = episodes.executor, episodes.pending, episodes.free
        active: dict[int, LiveEpisode] = {}
        options = self._reset_options()
        exhausted = False
        while pending or active or not exhausted:
            if free and (pending or not exhausted):
                starting, done = episodes.take(fresh)
                exhausted = exhausted or done
                if starting:
                    results = executor.reset([(slot, {**options, "episode": live.spec}) for slot, live in starting])
                    for (slot, live), tr in zip(starting, results):
                        if episodes.started(slot, live, tr):
                            error = calls.reset(live)
                            if error is None:
                                active[slot] = live
                            else:
                                episodes.finish(slot, live, error=("agent", describe(error)))
            if not active:
                continue
            if self._writer is not None:
                self._writer.check()  # a failed commit (disk full) ends the run here
            waiting = list(active.items())
            started = time.monotonic()
            plans = calls.decide([live for _, live in waiting])
            episodes.call_cost = (time.monotonic() - started, len(waiting))
            moves, _, ended = episodes.moves(waiting, plans)  # an abandoned call: asked next round
            for slot in ended:
                del active[slot]
            if not moves:
                continue
            for (slot, _, deadline), tr in zip(moves, executor.advance(moves)):
                if not episodes.stepped(slot, active[slot], deadline, tr):
                    del active[slot]

    def _pipeline(self, episodes: Episodes, calls: AgentCaller, fresh: Iterator[EpisodeSpec]) -> None:
        """Pipelined (the default): the agent answers the episodes that are ready while the
        executor steps the others.

        Each episode alternates between the two sides; nothing waits for a round. The
        agent gets the ready requests (up to ``batch_size`` per call, waiting at most
        ``batch_wait_s`` for a call to fill while envs are still stepping); an agent that
        declares ``max_concurrent_calls`` > 1 (a server's client) gets one request per call,
        each as soon as it is ready, that many calls at once. An episode's
        record does not depend on what ran beside it: its env, its seed and its requests
        are its own (tests/harness/run/test_pipeline.py compares with lockstep on every suite).
        """
        executor, pending, free = episodes.executor, episodes.pending, episodes.free
        events: queue.SimpleQueue[tuple] = queue.SimpleQueue()
        executor.start(lambda slot, tr: events.put((slot, tr)))
        concurrency = max(1, int(getattr(self.agent, "max_concurrent_calls", 1) or 1))
        # An agent taking concurrent calls (a server's client) gets each request on its own,
        # as soon as it is ready: a server batching continuously needs no batch from us.
        per_call = 1 if concurrency > 1 else max(1, self.spec.batch_size)
        wait_s = max(0.0, float(self.spec.batch_wait_s))
        pool = CallPool(concurrency, calls.serve, events)
        work = getattr(executor, "run_pending", None)  # envs stepped on this thread (local)
        live_at: dict[int, LiveEpisode] = {}  # every slot with an episode, wherever it is
        steps_of: dict[int, float | None] = {}  # slots stepping: their deadline; absent: resetting
        ready: deque[int] = deque()  # slots waiting for the agent, in the order they got ready
        in_env = 0  # slots with an env operation in flight
        options = self._reset_options()
        exhausted = False
        filling_since: float | None = None
        try:
            while True:
                if free and (pending or not exhausted):
                    starting, done = episodes.take(fresh)
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
                while ready and pool.idle:
                    if len(ready) < per_call and in_env and wait_s:
                        now = time.monotonic()
                        filling_since = filling_since or now
                        if now - filling_since < wait_s:
                            timeout = filling_since + wait_s - now
                            break
                    filling_since = None
                    batch = [ready.popleft() for _ in range(min(per_call, len(ready)))]
                    pool.submit([(slot, live_at[slot]) for slot in batch])
                event = next_event(events, work, timeout)
                if event is None:
                    continue
                while True:  # everything that arrived, before deciding the next calls
                    if event[0] is CALL_DONE:
                        _, served, plans, cost = event
                        pool.done()
                        episodes.call_cost = cost
                        moves, again, ended = episodes.moves(served, plans)
                        ready.extend(again)
                        for slot in ended:
                            del live_at[slot]
                        for slot, _, deadline in moves:
                            steps_of[slot] = deadline
                        if moves:
                            in_env += len(moves)
                            executor.submit_advance(moves)
                    elif event[0] is CALL_FAILED:
                        raise event[1]
                    else:
                        slot, tr = event
                        in_env -= 1
                        live = live_at[slot]
                        if slot in steps_of:
                            goes_on = episodes.stepped(slot, live, steps_of.pop(slot), tr)
                        else:
                            goes_on = episodes.started(slot, live, tr)
                        if goes_on:
                            ready.append(slot)
                        else:
                            del live_at[slot]
                    try:
                        event = events.get_nowait()
                    except queue.Empty:
                        break
        finally:
            pool.close()
