"""The agent's side of a run: each call made within its time limit, its replies checked
against the contract, and the pool of threads the pipelined runner makes its calls on.

A call that runs past its limit is abandoned on its daemon thread (a thread cannot be
killed) and marked cancelled, so the agent can stop early (:func:`call_cancelled`); the
CLI waits for such calls before the process exits (:func:`wait_for_abandoned`).
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from harness.interfaces import Agent, AgentReply, AgentRequest
from harness.run.records import LiveEpisode, output_tokens
from harness.types import RunSpec


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


#: A plan's place when the call serving it was abandoned before its own deadline: ask again.
AGAIN = object()
#: Events of the pipelined runner's agent-call threads (beside the executor's (slot, Transition)).
CALL_DONE = object()
CALL_FAILED = object()


def next_event(events: "queue.SimpleQueue[tuple]", work: Callable[[], bool] | None,
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
class ResetFailed:
    """In place of a plan: the agent's reset of that episode raised (no call was made for it)."""

    error: BaseException


class CallPool:
    """``size`` daemon threads making the pipelined runner's agent calls.

    Each takes a batch of ``(slot, live)``, runs ``serve`` on it and puts
    ``(CALL_DONE, batch, plans, cost)`` on ``events``. The threads are
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
            self._events.put((CALL_FAILED, exc))
            return
        if self._size == 1:
            self._mean = cost[0] if self._mean is None else 0.8 * self._mean + 0.2 * cost[0]
        self._events.put((CALL_DONE, batch, plans, cost))

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
#: one call at a time) is called on the runner's thread (see :class:`CallPool`).
INLINE_BELOW_S = 0.002


#: What an agent call may raise that becomes an error record. SystemExit too: an agent
#: (or a library inside it) calling sys.exit() must not end the run silently.
AGENT_ERRORS = (Exception, SystemExit)


def agent_error(exc: BaseException) -> BaseException:
    """``exc`` as an error-record exception (a SystemExit becomes a RuntimeError naming it)."""
    if isinstance(exc, SystemExit):
        return RuntimeError(f"the agent called sys.exit({exc.code!r})")
    return exc


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


class AgentCaller:
    """The runner's agent calls: an episode's ``agent.reset``, and one batched ``act`` for the
    episodes waiting, each within its time limit, its replies checked (a plan or an exception
    per episode, never a crash).

    ``on_call`` is told of every call: ("started", requests, None) before it and
    ("finished", requests, output tokens or None) after it (see :class:`harness.run.runner.Runner`).
    """

    def __init__(self, agent: Agent, spec: RunSpec,
                 on_call: Callable[[str, int, int | None], None] | None = None):
        self.agent, self.spec, self.on_call = agent, spec, on_call

    def reset(self, live: LiveEpisode) -> BaseException | None:
        try:
            self.agent.reset(live.spec)
        except AGENT_ERRORS as exc:
            return agent_error(exc)
        return None

    def serve(self, served: list[tuple[int, LiveEpisode]]) -> tuple[list[Any], tuple[float, int]]:
        """On an agent-call thread: the agent's reset of episodes starting, then one call."""
        started = time.monotonic()
        plans: list[Any] = [None] * len(served)
        asking = []
        for i, (_, live) in enumerate(served):
            if live.needs_reset:
                live.needs_reset = False
                error = self.reset(live)
                if error is not None:
                    plans[i] = ResetFailed(error)
                    continue
            asking.append(i)
        if asking:
            for i, plan in zip(asking, self.decide([served[i][1] for i in asking])):
                plans[i] = plan
        return plans, (time.monotonic() - started, len(asking))

    def decide(self, lives: Sequence[LiveEpisode]) -> list[Any]:
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
        except AGENT_ERRORS:
            plans = []
            for live, r in zip(lives, requests):
                limit, by_deadline = self._call_limit([live])
                try:
                    plans.append(_one(self._act([r], limit)))
                except AgentTimeout as exc:
                    plans += self._timed_out([live]) if by_deadline else [exc]
                except AGENT_ERRORS as exc:  # noqa: BLE001 - an error record
                    plans.append(agent_error(exc))
            return [p if isinstance(p, BaseException) or p is AGAIN else _checked(p) for p in plans]
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
            self.on_call("finished", len(requests), output_tokens(plans))

    def _call_limit(self, lives: Sequence[LiveEpisode]) -> tuple[float | None, bool]:
        """How long the next agent call may take: ``agent_timeout_s`` or, when sooner, the
        earliest deadline of the episodes it serves (then True): a hung agent ends there."""
        limit = self.spec.agent_timeout_s
        deadlines = [l.deadline for l in lives if l.deadline is not None]
        if deadlines:
            left = max(0.0, min(deadlines) - time.monotonic())
            if limit is None or left < limit:
                return left, True
        return limit, False

    def _timed_out(self, lives: Sequence[LiveEpisode]) -> list[Any]:
        """After a call abandoned at an episode deadline: a timeout for each episode past its
        deadline; the others (later deadlines) are asked again in the next round."""
        now = time.monotonic()
        return [AgentTimeout(f"episode exceeded its wall-clock limit (episode_timeout_s="
                             f"{self.spec.episode_timeout_s:g}) while the agent was deciding")
                if l.deadline is not None and now >= l.deadline - 1e-3 else AGAIN for l in lives]

