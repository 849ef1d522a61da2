"""``executor=ray``: envs on Ray actors, on one machine or a cluster (``ray`` extra).

Each actor (one CPU) owns several env slots; slot ``s`` lives on actor
``s % actors`` as env ``s // actors``. The driver keeps everything else: the
agent (one batched call serves every waiting episode, as with ``local``), the
deadlines, retries and the single SQLite writer. An actor runs the same
:func:`harness.run.executors.reset_env` / :func:`harness.run.executors.drive` code as
the other executors, so the same seeds give the same records.

Cost per step (see docs/scale-out.md): one remote call per actor per batch
(all of that actor's slots of a ``reset`` / ``advance`` / ``submit_*`` in one
call, in order, returning a list), whose small results Ray inlines in the reply
(no object-store round trip). Lockstep waits on the refs (``ray.wait``, bounded
by the nearest deadline); pipelined, each call's future wakes the collector.

Both ways of driving the executor share one path: lockstep ``reset`` /
``advance`` submit, then drain the finished calls until theirs are in;
pipelined ``submit_*`` return at once and a collector thread drains and
delivers.

Faults:

* an actor that dies (killed, out of memory, its node lost) turns its calls in
  flight into ``worker`` faults for their slots, which the runner retries on a
  fresh actor (``max_retries``) and then records as an error; the other slots
  that lived on it get the same fault at their next call;
* an episode past its deadline (``episode_timeout_s``) gets its actor killed
  (a hung simulator step cannot be interrupted otherwise) and a ``timeout``
  record; every other slot with a call on that actor gets a ``worker`` fault
  and is retried. Only the slot the actor is executing can condemn it: the
  driver asks the actor which one that is (a probe served by a second thread
  of the actor, :meth:`harness.run.ray_actors.EnvActor.busy`); a step that holds the GIL cannot
  answer, and then the first slot of the running call whose deadline passed
  is blamed.

Cluster: :func:`harness.run.ray_cluster.ensure_ray` joins ``executor.address`` (``auto``, ``HOST:PORT``,
``ray://HOST:PORT``), else ``RAY_ADDRESS``, else starts a local one-node
cluster. Deadlines cross machines as remaining seconds, never as clock
readings.
"""


from __future__ import annotations

import itertools
import math
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from harness.run.executors import Deliver, EnvFactory, ResetOptions, Transition, _error
from harness.run.ray_actors import ACTOR_CPUS, EnvActor
from harness.run.ray_cluster import ensure_ray, first_line

#: How long the driver waits for an actor to say which slot it is executing.
PROBE_TIMEOUT_S = 1.0
#: Re-ask an actor this often while a later slot of its running call is past its deadline.
PROBE_EVERY_S = 0.1

TIMEOUT_KILLED = ("timeout", "episode exceeded its wall-clock limit; Ray actor killed")
NEIGHBOUR_KILLED = ("worker", "Ray actor killed: another episode on it passed its deadline")


@dataclass(eq=False)
class _Call:
    """One remote ``run`` on one actor: its slots in execution order."""

    id: int
    actor: int
    generation: int
    slots: list[int]
    deadlines: list[float | None]
    deliver: Deliver
    ref: Any = None
    #: Pipelined: the ref's future, whose callback wakes the collector.
    future: Any = None
    resolved: bool = False
    #: Index of the operation the actor last said it runs; when to ask again.
    busy: int = 0
    next_probe: float = 0.0


class RayExecutor:
    name = "ray"

    def __init__(self, env_factory: EnvFactory, actors: int, envs_per_actor: int, address: str | None = None):
        self._ray = ray = ensure_ray(address)
        self._factory = env_factory
        ray.method(concurrency_group="probe")(EnvActor.busy)
        self._remote = ray.remote(num_cpus=ACTOR_CPUS, max_restarts=0, max_task_retries=0,
                                  concurrency_groups={"probe": 1})(EnvActor)
        self.actors = max(1, actors)
        self.capacity = self.actors * max(1, envs_per_actor)
        self._handles: list[Any] = [None] * self.actors
        self._generation = [0] * self.actors  # bumped when an actor is lost
        self._slot_generation: list[int | None] = [None] * self.capacity
        self._lock = threading.RLock()
        self._inflight: list[deque[_Call]] = [deque() for _ in range(self.actors)]  # per actor, in order
        #: Finished calls, (deliver, slot, transition) refused at submission; None wakes the collector.
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        self._ids = itertools.count()
        self._deliver: Deliver | None = None
        self._collector: threading.Thread | None = None
        self._closing = False

    def _where(self, slot: int) -> tuple[int, int]:
        return slot % self.actors, slot // self.actors

    def _actor(self, a: int) -> Any:
        if self._handles[a] is None:
            self._handles[a] = self._remote.remote(self._factory)
        return self._handles[a]

    def actor_handle(self, slot: int) -> Any:
        """The Ray actor holding ``slot`` now (tests, diagnostics)."""
        return self._actor(self._where(slot)[0])

    def _lose(self, a: int) -> None:
        handle, self._handles[a] = self._handles[a], None
        self._generation[a] += 1
        if handle is not None:
            try:
                self._ray.kill(handle, no_restart=True)
            except Exception:
                pass

    # --- the executor interface ---------------------------------------------
    def reset(self, items: Sequence[tuple[int, ResetOptions]]) -> list[Transition]:
        return self._lockstep(self._reset_ops(items))

    def advance(self, items: Sequence[tuple[int, Sequence[Any], float | None]]) -> list[Transition]:
        return self._lockstep(self._advance_ops(items))

    def start(self, deliver: Deliver) -> None:
        self._deliver = deliver
        self._collector = threading.Thread(target=self._drain, args=(lambda: self._closing, self._wait_events),
                                           daemon=True, name="ray-executor-collector")
        self._collector.start()

    def submit_reset(self, items: Sequence[tuple[int, ResetOptions]]) -> None:
        self._submit(self._reset_ops(items), self._pipelined(), pipelined=True)

    def submit_advance(self, items: Sequence[tuple[int, Sequence[Any], float | None]]) -> None:
        self._submit(self._advance_ops(items), self._pipelined(), pipelined=True)

    def discard(self, slot: int) -> None:
        """Drop a slot's env after a fault; the next reset builds a fresh one."""
        a, i = self._where(slot)
        with self._lock:
            if self._handles[a] is not None and self._slot_generation[slot] == self._generation[a]:
                try:
                    self._handles[a].discard.remote(i)
                except Exception:
                    pass
            self._slot_generation[slot] = None

    def close(self) -> None:
        self._closing = True
        self._events.put(None)
        if self._collector is not None:
            self._collector.join(timeout=10)
        with self._lock:
            for a in range(self.actors):
                self._lose(a)

    # --- submission ----------------------------------------------------------
    def _pipelined(self) -> Deliver:
        if self._deliver is None:
            raise RuntimeError("RayExecutor.submit_* before start(deliver)")
        return self._deliver

    def _reset_ops(self, items: Sequence[tuple[int, ResetOptions]]) -> list[tuple[int, tuple, float | None]]:
        return [(slot, ("reset", self._where(slot)[1], dict(options)), None) for slot, options in items]

    def _advance_ops(self, items: Sequence[tuple[int, Sequence[Any], float | None]]) -> list[tuple[int, tuple, float | None]]:
        now = time.monotonic()
        return [(slot, ("advance", self._where(slot)[1], list(actions),
                        None if deadline is None else max(0.0, deadline - now)), deadline)
                for slot, actions, deadline in items]

    def _lockstep(self, ops: list[tuple[int, tuple, float | None]]) -> list[Transition]:
        results: dict[int, Transition] = {}
        self._submit(ops, results.__setitem__, pipelined=False)
        self._drain(lambda: len(results) == len(ops), self._wait_refs)
        return [results[slot] for slot, _, _ in ops]

    def _submit(self, ops: list[tuple[int, tuple, float | None]], deliver: Deliver, *, pipelined: bool) -> None:
        """One ``run`` call per actor for its slots among ``ops`` (in their order). Pipelined,
        each call's future wakes the collector when it finishes; lockstep waits on the refs."""
        by_actor: dict[int, list[tuple[int, tuple, float | None]]] = {}
        now_errors: list[tuple[int, Transition]] = []
        with self._lock:
            for slot, op, deadline in ops:
                a = self._where(slot)[0]
                if op[0] == "reset":
                    self._slot_generation[slot] = self._generation[a]
                elif self._slot_generation[slot] != self._generation[a]:
                    now_errors.append((slot, Transition(error=("worker", "the Ray actor holding this episode died"))))
                    continue
                by_actor.setdefault(a, []).append((slot, op, deadline))
            for a, batch in by_actor.items():
                try:
                    self._send(a, batch, deliver, pipelined)
                except Exception:  # one slot's actions cannot be serialized: find it, send the others
                    for one in batch:
                        try:
                            self._send(a, [one], deliver, pipelined)
                        except Exception as exc:
                            now_errors.append((one[0], Transition(error=(
                                "agent", f"actions cannot be sent to a Ray actor: {type(exc).__name__}: {exc}"))))
        for slot, tr in now_errors:  # delivered by the draining thread too, never inside submit_*
            self._events.put((deliver, slot, tr))
        self._events.put(None)  # the collector recomputes its nearest deadline

    def _send(self, a: int, batch: list[tuple[int, tuple, float | None]], deliver: Deliver, pipelined: bool) -> None:
        call = _Call(next(self._ids), a, self._generation[a], [s for s, _, _ in batch], [d for _, _, d in batch],
                     deliver)
        call.ref = self._actor(a).run.remote(call.id, [op for _, op, _ in batch])
        self._inflight[a].append(call)
        if pipelined:
            call.future = call.ref.future()
            call.future.add_done_callback(lambda _f, call=call: self._events.put(call))

    # --- collection ------------------------------------------------------------
    def _drain(self, stop: Callable[[], bool], wait: Callable[[float | None], list[Any]]) -> None:
        """Deliver finished calls and enforce deadlines until ``stop()``; ``wait(timeout)``
        returns what finished: calls, (deliver, slot, transition) refused at submission."""
        while not stop():
            wake = self._next_check()
            try:
                for item in wait(None if wake is None else max(0.0, wake - time.monotonic())):
                    if type(item) is tuple:
                        item[0](item[1], item[2])
                    else:
                        self._finish(item)
                self._check_deadlines()
            except Exception:  # never leave a slot without its delivery
                self._fail_everything(_error("worker"))

    def _wait_events(self, timeout: float | None) -> list[Any]:
        """Pipelined: the next finished call (its future's callback) or submission wake-up."""
        try:
            item = self._events.get(timeout=timeout)
        except queue.Empty:
            return []
        return [] if item is None else [item]

    def _wait_refs(self, timeout: float | None) -> list[Any]:
        """Lockstep: every call in flight (they are all this round's), or those done by ``timeout``."""
        items = []
        while True:
            try:
                item = self._events.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                items.append(item)
        if items:
            return items
        with self._lock:
            calls = {c.ref: c for q in self._inflight for c in q}
        if not calls:
            return []
        ready, _ = self._ray.wait(list(calls), num_returns=len(calls), timeout=timeout)
        return [calls[r] for r in ready]

    def _next_check(self) -> float | None:
        with self._lock:
            times = [t for q in self._inflight if q for t in [self._due(q[0])] if t is not None]
        return min(times) if times else None

    @staticmethod
    def _due(call: _Call) -> float | None:
        """When the head call ``call`` must next be checked: the nearest deadline of its
        operations from the one running on, and not before its next probe."""
        deadlines = [d for d in call.deadlines[call.busy:] if d is not None]
        return max(min(deadlines), call.next_probe) if deadlines else None

    def _finish(self, call: _Call) -> None:
        from ray.exceptions import RayActorError

        out: list[tuple[int, Transition]] = []
        with self._lock:
            if call.resolved:
                return
            call.resolved = True
            queue_ = self._inflight[call.actor]
            if call in queue_:
                queue_.remove(call)
            try:
                results = call.future.result(timeout=0) if call.future is not None else self._ray.get(call.ref)
                out = list(zip(call.slots, results))
            except RayActorError as exc:
                a = call.actor
                if self._handles[a] is not None and call.generation == self._generation[a]:
                    self._lose(a)
                out = [(s, Transition(error=("worker", f"Ray actor died ({first_line(exc)})"))) for s in call.slots]
            except Exception as exc:
                out = [(s, Transition(error=("worker", f"Ray task failed: {first_line(exc)}"))) for s in call.slots]
        for slot, tr in out:
            call.deliver(slot, tr)

    def _check_deadlines(self) -> None:
        now = time.monotonic()
        with self._lock:
            heads = [q[0] for q in self._inflight if q]
        for call in heads:
            due = self._due(call)
            if due is None or now <= due or call.resolved:
                continue
            running = self._probe(call)
            if running is _DONE:  # finished: its result is on its way
                call.next_probe = now + PROBE_EVERY_S
                continue
            if running is not None:
                call.busy = running
                deadline = call.deadlines[running]
                if deadline is None or now <= deadline:  # a later slot's deadline passed; it has not started
                    call.next_probe = now + PROBE_EVERY_S
                    continue
            else:  # no answer (the step holds the GIL): the first operation past its deadline
                running = next(k for k in range(call.busy, len(call.slots))
                               if call.deadlines[k] is not None and now > call.deadlines[k])
            self._condemn(call, running)

    def _probe(self, call: _Call) -> Any:
        """Index of the operation of ``call`` its actor runs now; _DONE when it runs
        none of them (finished, not started, or its actor died); None without an answer."""
        handle = self._handles[call.actor]
        if handle is None or call.generation != self._generation[call.actor]:
            return _DONE  # its actor died: the error results are on their way
        try:
            busy = self._ray.get(handle.busy.remote(), timeout=PROBE_TIMEOUT_S)
        except Exception:
            return None
        return _DONE if busy is None or busy[0] != call.id else busy[1]

    def _condemn(self, call: _Call, culprit: int) -> None:
        """Kill ``call``'s actor: ``timeout`` for the operation past its deadline, ``worker``
        faults for every other slot with a call on that actor."""
        out: list[tuple[Deliver, int, Transition]] = []
        with self._lock:
            if call.resolved:
                return
            for other in self._inflight[call.actor]:
                other.resolved = True
                for k, slot in enumerate(other.slots):
                    culprit_here = other is call and k == culprit
                    out.append((other.deliver, slot, Transition(error=TIMEOUT_KILLED if culprit_here
                                                                 else NEIGHBOUR_KILLED)))
            self._inflight[call.actor].clear()
            self._lose(call.actor)
        for deliver, slot, tr in out:
            deliver(slot, tr)

    def _fail_everything(self, error: tuple[str, str]) -> None:
        out = []
        with self._lock:
            for a, calls in enumerate(self._inflight):
                for call in calls:
                    call.resolved = True
                    out += [(call.deliver, s) for s in call.slots]
                calls.clear()
                self._lose(a)
        for deliver, slot in out:
            deliver(slot, Transition(error=error))


#: A probe's answer: the actor runs none of the call's operations.
_DONE = object()


def ray_executor(*, env_factory: EnvFactory, num_workers: int, batch_size: int,
                 address: str | None = None) -> RayExecutor:
    """``num_workers`` actors, ``ceil(batch_size / num_workers)`` envs on each."""
    actors = max(1, num_workers)
    return RayExecutor(env_factory, actors=actors, envs_per_actor=max(1, math.ceil(batch_size / actors)),
                       address=address)
