"""The episodes of one run on an executor's slots: which slot takes which episode, what each
env result and each plan does to its episode, and how an episode ends (retried on a fresh
env after a simulator fault, else its record written and counted)."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from harness.interfaces import AgentReply, InvalidOutput
from harness.run.calls import AGAIN, AgentTimeout, ResetFailed
from harness.run.executors import Transition
from harness.run.records import LiveEpisode, RecordMaker, describe
from harness.types import TERMINATION_EMPTY_PLAN, EpisodeRecord, EpisodeSpec, RunSpec


@dataclass
class RunSummary:
    """What one :meth:`harness.run.runner.Runner.run` did: counters, and the records themselves
    for small runs.

    ``records`` is None when the run had more than
    :data:`harness.run.runner.KEEP_RECORDS_UP_TO` episodes to run (or
    ``Runner(keep_records=False)``): every record is in the store, and a 100,000-episode
    run must not hold them all in memory.
    """

    run_id: str
    total: int
    skipped: int
    finished: int = 0
    successes: int = 0
    errors: int = 0
    records: list[EpisodeRecord] | None = field(default_factory=list)


class Episodes:
    """One run's episodes on ``executor``'s slots.

    ``free`` holds the slots without an episode, ``pending`` the episodes to attempt again
    (they go first). A finished episode's record goes to ``writer`` (the store's) with its
    transcript, into ``summary`` and to ``on_record``. ``call_cost`` is the last agent call's
    (wall time, batch size), kept in the transcript entries of its replies.
    """

    def __init__(self, spec: RunSpec, executor: Any, records: RecordMaker, summary: RunSummary, *,
                 writer: Any = None, on_record: Callable[[EpisodeRecord], None] | None = None,
                 replan: int | None = None):
        self.spec, self.executor, self.records, self.summary = spec, executor, records, summary
        self.writer, self.on_record, self.replan = writer, on_record, replan
        self.pending: deque[LiveEpisode] = deque()
        self.free = list(range(executor.capacity - 1, -1, -1))
        self.call_cost: tuple[float, int] = (0.0, 0)

    def take(self, fresh: Iterator[EpisodeSpec]) -> tuple[list, bool]:
        """Episodes for the free slots (retries first): ([(slot, live)], fresh exhausted)."""
        starting = []
        free, pending = self.free, self.pending
        while free:
            if pending:
                live = pending.popleft()
            else:
                spec = next(fresh, None)
                if spec is None:
                    return starting, True
                live = LiveEpisode(spec)
            live.started = time.monotonic()
            starting.append((free.pop(), live))
        return starting, False

    def started(self, slot: int, live: LiveEpisode, tr: Transition) -> bool:
        """A reset's result: True when the episode is under way (else it faulted)."""
        if tr.error:
            self.fault(slot, live, tr)
            return False
        live.observation, live.info = tr.observation, tr.info
        # The wall-clock limit runs from the end of the reset (a worker's start-up and
        # the scene's load are not the agent's time); agent calls and steps count.
        timeout = self.spec.episode_timeout_s
        live.deadline = time.monotonic() + timeout if timeout else None
        return True

    def moves(self, served: list[tuple[int, LiveEpisode]], plans: list[Any]) -> tuple[list[tuple], list[int], list[int]]:
        """One call's plans -> ``(moves, again, ended)``: the executor's moves, the slots whose
        call was abandoned at another episode's deadline (to be asked again), and the slots
        whose episode ended here (its record written)."""
        moves: list[tuple] = []
        again: list[int] = []
        ended: list[int] = []
        for (slot, live), plan in zip(served, plans):
            if plan is AGAIN:
                again.append(slot)
            elif isinstance(plan, ResetFailed):
                self.finish(slot, live, error=("agent", describe(plan.error)))
                ended.append(slot)
            elif (move := self.move(slot, live, plan)) is None:
                ended.append(slot)
            else:
                moves.append(move)
        return moves, again, ended

    def move(self, slot: int, live: LiveEpisode, plan: Any) -> tuple | None:
        """A checked plan -> the executor's move ``(slot, actions, deadline)``, or None when it
        ended the episode (an exception, an empty plan: the record is written here)."""
        live.agent_calls += 1
        if type(plan) is list or type(plan) is tuple:  # the common case, kept cheap
            actions = plan
        elif isinstance(plan, AgentReply):
            if plan.raw_output is not None or plan.output_error is not None:
                live.transcript.append(self.records.transcript_entry(live, plan, self.call_cost))
            actions = plan.actions
            if plan.output_error is not None:
                if not len(actions):  # one invalid action, no step, no history (counted in drive)
                    return (slot, [InvalidOutput(plan.raw_output or "", plan.output_error)], live.deadline)
                live.output_errors += 1  # the agent's fallback actions run as a plan
                live.fallback_plans += 1
        else:  # an exception instead of a plan
            # A call that passed its own wall-clock limit (a backend's TimeoutError) is a timeout too.
            kind = "timeout" if isinstance(plan, (AgentTimeout, TimeoutError)) else "agent"
            self.finish(slot, live, error=(kind, describe(plan)))
            return None
        if not len(actions):
            self.finish(slot, live, termination=TERMINATION_EMPTY_PLAN)
            return None
        if self.replan is not None:
            actions = actions[: self.replan]
        return (slot, actions, live.deadline)

    def stepped(self, slot: int, live: LiveEpisode, deadline: float | None, tr: Transition) -> bool:
        """A run of actions' result: True when the episode goes on (else its record is written)."""
        if tr.info is not None:  # something was stepped (an InvalidOutput too)
            live.output_errors += tr.invalid_outputs
            live.steps += tr.steps
            live.history += tr.history
            live.observation, live.info = tr.observation, tr.info
        if tr.error:
            self.fault(slot, live, tr)
        elif tr.done:
            self.finish(slot, live)
        elif deadline is not None and time.monotonic() > deadline:
            self.finish(slot, live, error=("timeout", "episode exceeded its wall-clock limit"))
        else:
            return True
        return False

    def fault(self, slot: int, live: LiveEpisode, tr: Transition) -> None:
        """An env or worker fault: the episode again on a fresh env (up to ``max_retries``
        times), else an error record."""
        kind, message = tr.error  # type: ignore[misc]
        self.executor.discard(slot)
        if kind in ("env", "worker") and live.attempts <= self.spec.max_retries:
            self.free.append(slot)
            self.pending.appendleft(LiveEpisode(live.spec, attempts=live.attempts + 1))
            return
        self.finish(slot, live, error=(kind, message))

    def finish(self, slot: int, live: LiveEpisode, *, termination: str | None = None,
               error: tuple[str, str] | None = None) -> None:
        """The episode ended: its slot freed, its record written and counted."""
        self.free.append(slot)
        record = self.records.record(live, termination=termination, error=error)
        if self.writer is not None:
            self.writer.add(record, live.transcript)
        summary = self.summary
        summary.finished += 1
        summary.successes += record.success
        summary.errors += record.error_kind is not None
        if summary.records is not None:
            summary.records.append(record)
        if self.on_record:
            self.on_record(record)
