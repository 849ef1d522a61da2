"""Executors: where the envs live while the runner drives them.

* ``local``: every env slot in this process (cheap suites, debugging).
* ``process``: a pool of worker processes, each owning one env; a step that
  hangs past the episode deadline is ended by killing that worker.

Both run the same :func:`drive` loop, so an episode's steps are identical
whichever executor runs it.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import queue
import signal
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Mapping, Protocol, Sequence

from harness.interfaces import AgentContractError, EpisodeEnv, InvalidOutput
from harness.registry.catalog import EXECUTORS, SUITES
from harness.run.allocator import keep_freed_heap
from harness.types import INFO_ACTION_OK, INFO_FEEDBACK
from harness.util import console

#: Builds a fresh env. Must be picklable for the process executor
#: (see :class:`SuiteEnvFactory`).
EnvFactory = Callable[[], EpisodeEnv]


@dataclass(slots=True)
class Transition:
    """Where an episode stands after a reset or a run of actions."""

    observation: Any = None
    info: dict[str, Any] | None = None
    done: bool = False
    steps: int = 0
    history: list[tuple[Any, str]] = field(default_factory=list)
    #: InvalidOutput actions stepped that count as output errors (the env counts them; not in the history).
    invalid_outputs: int = 0
    #: Set when the env raised or the deadline passed: (kind, message).
    error: tuple[str, str] | None = None


@dataclass(frozen=True)
class SuiteEnvFactory:
    """Picklable env factory: builds the registered suite, then one env.

    The suite object is cached per process, so a worker builds it once.
    """

    suite: str
    params: Mapping[str, Any]

    def __call__(self) -> EpisodeEnv:
        key = (self.suite, tuple(sorted((k, repr(v)) for k, v in self.params.items())))
        suite = _SUITE_CACHE.get(key)
        if suite is None:
            suite = SUITES.build(self.suite, **dict(self.params))
            _SUITE_CACHE[key] = suite
        return suite.make_env()


_SUITE_CACHE: dict[Any, Any] = {}


def _error(kind: str) -> tuple[str, str]:
    return (kind, traceback.format_exc(limit=8).strip())


#: Reset options: {"episode": EpisodeSpec, "privileged": bool, "render": bool, "artifacts_dir": str | None}.
ResetOptions = Mapping[str, Any]


#: Where the pipelined runner's results go: ``deliver(slot, transition)``, callable from any thread.
Deliver = Callable[[int, Transition], None]


class Executor(Protocol):
    """Where the envs live. Two ways to drive it; a run uses one of them.

    Lockstep (``runner.pipeline=false``): ``reset`` / ``advance`` take a batch of
    slots and return when every one has its :class:`Transition`.

    Pipelined (the default): after ``start(deliver)``, ``submit_reset`` /
    ``submit_advance`` return at once and every submitted slot later gets exactly
    one ``deliver(slot, transition)`` call (from any thread; an error Transition for
    a fault, a ``timeout`` one at the latest when the slot's deadline passes). A slot
    has at most one operation in flight; ``discard`` is only called for a slot with
    none. The envs, the :func:`reset_env` / :func:`drive` code and hence the records
    are the same either way.
    """

    name: str
    capacity: int

    def reset(self, items: Sequence[tuple[int, "ResetOptions"]]) -> list[Transition]: ...

    def advance(self, items: Sequence[tuple[int, Sequence[Any], float | None]]) -> list[Transition]: ...

    def start(self, deliver: Deliver) -> None: ...

    def submit_reset(self, items: Sequence[tuple[int, "ResetOptions"]]) -> None: ...

    def submit_advance(self, items: Sequence[tuple[int, Sequence[Any], float | None]]) -> None: ...

    def discard(self, slot: int) -> None: ...

    def close(self) -> None: ...

    # Optional, for executors whose envs live in the runner's own thread (``local``):
    # ``run_pending() -> bool`` does one queued operation there (delivering its result),
    # False when none is queued. The runner calls it whenever it would otherwise wait.


def reset_env(env: EpisodeEnv, options: ResetOptions) -> Transition:
    try:
        obs, info = env.reset(seed=options["episode"].seed, options=dict(options))
    except Exception:
        return Transition(error=_error("env"))
    return Transition(observation=obs, info=info)


def drive(env: EpisodeEnv, actions: Sequence[Any], deadline: float | None) -> Transition:
    """Execute ``actions`` open-loop until one fails, the episode ends, or time runs out.

    An :class:`InvalidOutput` is stepped (the env counts it) but not added to
    the history; an :class:`AgentContractError` from the env ends the episode
    as an ``agent`` error.
    """
    out = Transition()
    history = out.history
    step = env.step
    obs = info = None
    stepped = charged = 0
    for action in actions:
        try:
            obs, _reward, terminated, truncated, info = step(action)
        except AgentContractError as exc:
            out.error = ("agent", f"bad action: {exc}")
            break
        except Exception:
            out.error = _error("env")
            break
        stepped += 1
        if type(action) is InvalidOutput:
            out.invalid_outputs += action.output_error
            charged += action.costs_step
        else:
            history.append((action, info.get(INFO_FEEDBACK, "")))
        if terminated or truncated:
            out.done = True
            break
        if info.get(INFO_ACTION_OK, True) is False:
            break
        if deadline is not None and time.monotonic() > deadline:
            out.error = ("timeout", "episode exceeded its wall-clock limit")
            break
    out.steps = len(history) + charged
    if stepped:
        out.observation, out.info = obs, info
    return out


class LocalExecutor:
    """Env slots in this process. A hung ``env.step`` cannot be interrupted here:
    deadlines are checked between steps (use ``process`` for hard timeouts)."""

    name = "local"

    def __init__(self, env_factory: EnvFactory, slots: int):
        self._factory = env_factory
        self._envs: list[EpisodeEnv | None] = [None] * slots
        self.capacity = slots

    def _env(self, slot: int) -> EpisodeEnv:
        env = self._envs[slot]
        if env is None:
            env = self._envs[slot] = self._factory()
        return env

    def reset(self, items: Sequence[tuple[int, ResetOptions]]) -> list[Transition]:
        out = []
        for slot, options in items:
            try:
                env = self._env(slot)
            except Exception:
                out.append(Transition(error=_error("env")))
                continue
            out.append(reset_env(env, options))
        return out

    def advance(self, items: Sequence[tuple[int, Sequence[Any], float | None]]) -> list[Transition]:
        envs = self._envs  # every slot in items was reset, so its env exists
        return [drive(envs[slot], actions, deadline) for slot, actions, deadline in items]

    def _discard_now(self, slot: int) -> None:
        env, self._envs[slot] = self._envs[slot], None
        _close_quietly(env)

    def discard(self, slot: int) -> None:
        """Drop a slot's env after a fault; the next reset builds a fresh one."""
        if self._jobs is not None:
            self._jobs.append(("discard", slot))
        else:
            self._discard_now(slot)

    # --- pipelined: env work queued, done on the runner's thread (``run_pending``) -------
    # The envs stay on the thread that made them (an env holding a GL context renders
    # there, as in lockstep); the agent's calls run on threads of their own meanwhile.
    _jobs: "deque[tuple] | None" = None

    def start(self, deliver: Deliver) -> None:
        self._jobs, self._deliver = deque(), deliver

    def submit_reset(self, items: Sequence[tuple[int, ResetOptions]]) -> None:
        self._jobs.extend(("reset", slot, options) for slot, options in items)  # type: ignore[union-attr]

    def submit_advance(self, items: Sequence[tuple[int, Sequence[Any], float | None]]) -> None:
        self._jobs.extend(("advance", slot, actions, dl) for slot, actions, dl in items)  # type: ignore[union-attr]

    def run_pending(self) -> bool:
        """Do the oldest queued operation here and deliver its result; False when none is queued."""
        if not self._jobs:
            return False
        job = self._jobs.popleft()
        if job[0] == "discard":
            self._discard_now(job[1])
        elif job[0] == "reset":
            self._deliver(job[1], self.reset([(job[1], job[2])])[0])
        else:
            self._deliver(job[1], drive(self._envs[job[1]], job[2], job[3]))
        return True

    def close(self) -> None:
        self._jobs = None  # what is still queued (an interrupt) is dropped
        for slot in range(self.capacity):
            self._discard_now(slot)


#: The exit code of a worker process whose start re-ran a main script that has no
#: ``if __name__ == "__main__":`` guard (:func:`refuse_in_worker_start`).
UNGUARDED_MAIN_EXIT = 86


def refuse_in_worker_start(what: str) -> None:
    """End this process with one line and :data:`UNGUARDED_MAIN_EXIT` when it is a worker still
    importing the main script (multiprocessing's spawn and forkserver start a worker by
    importing the parent's main module as ``__mp_main__``, CPython Lib/multiprocessing/spawn.py
    ``_fixup_main_from_path``): the script's own work then runs again in every worker. The
    parent names the cause (:meth:`ProcessExecutor._death_cause`)."""
    if not getattr(mp.current_process(), "_inheriting", False):
        return
    import sys

    main = getattr(sys.modules.get("__mp_main__"), "__file__", None) or "the main script"
    print(f"harness: {what} ran while a worker process imported {main}: put the script's work under "
          "`if __name__ == \"__main__\":`", file=sys.stderr, flush=True)
    os._exit(UNGUARDED_MAIN_EXIT)


def _worker_main(conn: Connection, env_factory: EnvFactory) -> None:
    # Ctrl-C and terminal hang-ups go to the parent, which closes the workers:
    # a worker never prints a traceback of its own for them.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    if os.environ.get(console.LOG_ENV):  # the parent routes third-party warnings to the run's log
        console.install_from_env()
    keep_freed_heap()
    envs: dict[int, EpisodeEnv] = {}  # this worker's envs, by index (envs_per_worker of them)
    try:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                return  # parent gone
            op = msg[0]
            if op == "close":
                return
            index = msg[-1]
            if op == "drop":  # the parent discarded this env after a fault (no reply)
                _close_quietly(envs.pop(index, None))
                continue
            try:
                env = envs.get(index)
                if env is None:
                    env = envs[index] = env_factory()
            except Exception:
                reply = Transition(error=_error("env"))
            else:
                if op == "reset":
                    reply = reset_env(env, msg[1])
                elif op == "advance":
                    reply = drive(env, msg[1], msg[2])
                else:
                    continue
            try:
                conn.send(reply)
            except (BrokenPipeError, ConnectionResetError, EOFError, OSError):
                return  # parent gone (killed while this worker stepped): nobody to answer, quietly
    finally:
        for env in envs.values():
            _close_quietly(env)


def _close_quietly(env: EpisodeEnv | None) -> None:
    if env is not None:
        try:
            env.close()
        except Exception:
            pass


class ProcessExecutor:
    """``envs_per_worker`` envs (default 1) in each worker process. Workers are
    started lazily and replaced when one dies or is killed for passing an
    episode's deadline. Slot ``s`` is env ``s % envs_per_worker`` of worker
    ``s // envs_per_worker``; a worker steps its envs one after another, all
    workers in parallel, and the runner's one agent call serves every slot.
    Killing a worker (deadline, death) loses all its envs: their episodes in
    flight end as ``worker`` / ``timeout`` faults and are retried as usual."""

    name = "process"

    def __init__(self, env_factory: EnvFactory, workers: int, start_method: str = "spawn",
                 envs_per_worker: int = 1):
        self._factory = env_factory
        self._ctx = mp.get_context(start_method)
        self._k = max(1, int(envs_per_worker))
        self.capacity = workers * self._k
        self._procs: list[Any] = [None] * workers
        self._conns: list[Connection | None] = [None] * workers
        #: Each worker's incarnation (bumped at every start), and the incarnation that
        #: reset each slot's env: a step is never sent to an env its worker did not reset.
        self._incarnation = [0] * workers
        self._reset_by: dict[int, int] = {}

    def _conn(self, slot: int) -> Connection:
        slot //= self._k  # the worker of this env slot
        conn = self._conns[slot]
        if conn is None or not self._procs[slot].is_alive():
            if self._closing:  # a feeder's late request: never start a worker once closing
                raise RuntimeError("the executor is closed")
            self._kill(slot)
            parent, child = self._ctx.Pipe()
            proc = self._ctx.Process(
                target=_worker_main, args=(child, self._factory), daemon=True, name=f"harness-worker-{slot}"
            )
            proc.start()
            child.close()
            self._procs[slot], self._conns[slot] = proc, parent
            self._incarnation[slot] += 1
            conn = parent
        return conn

    def _roundtrip(self, requests: list[tuple[int, tuple, float | None]]) -> list[Transition]:
        results: dict[int, Transition] = {}
        # Per worker pipe, its env slots in the order their requests were sent
        # (a worker answers its requests in order).
        waiting: dict[Connection, list[tuple[int, float | None]]] = {}
        for slot, msg, deadline in requests:
            msg = (*msg, slot % self._k)
            try:
                payload = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # the agent's actions cannot cross a process boundary
                results[slot] = Transition(error=(
                    "agent", f"actions cannot be sent to a worker process (not picklable): {type(exc).__name__}: {exc}"))
                continue
            worker = slot // self._k
            if msg[0] == "advance" and self._reset_by.get(slot) != self._live_incarnation(worker):
                # The worker that reset this env died (or was replaced) since: its env is gone.
                # Never step a fresh env that was not reset; report the death (the runner
                # retries the episode from reset).
                results[slot] = Transition(error=("worker", f"worker process died ({self._death_cause(worker)}) "
                                                            "between two steps of this episode"))
                continue
            try:
                conn = self._conn(slot)
                if msg[0] == "reset":
                    self._reset_by[slot] = self._incarnation[worker]
                conn.send_bytes(payload)
            except Exception:
                results[slot] = Transition(error=_error("worker"))
                self._fail_worker(slot // self._k, waiting, results, "worker")
                continue
            waiting.setdefault(conn, []).append((slot, deadline))
        while waiting:
            deadlines = [d for queue in waiting.values() for _, d in queue if d is not None]
            timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            ready = wait(list(waiting), timeout=timeout)
            for conn in ready:
                queue = waiting[conn]
                slot, _ = queue[0]
                try:
                    results[slot] = conn.recv()
                except (EOFError, OSError):
                    cause = f"worker process died ({self._death_cause(slot // self._k)})"
                    self._fail_worker(slot // self._k, waiting, results, "worker", cause)
                    continue
                queue.pop(0)
                if not queue:
                    del waiting[conn]
            now = time.monotonic()
            for conn, queue in list(waiting.items()):
                if any(d is not None and now > d for _, d in queue):
                    culprit = queue[0][0]  # the request the worker is busy with
                    self._fail_worker(culprit // self._k, waiting, results, "worker",
                                      "its worker was killed: another env of that worker passed its deadline")
                    results[culprit] = Transition(error=("timeout", "episode exceeded its wall-clock limit; worker killed"))
        return [results[slot] for slot, _, _ in requests]

    def _live_incarnation(self, worker: int) -> int | None:
        """The incarnation of a worker that is running now, else None."""
        proc = self._procs[worker]
        return self._incarnation[worker] if proc is not None and proc.is_alive() else None

    def _fail_worker(self, worker: int, waiting: dict, results: dict, kind: str, message: str | None = None) -> None:
        """Kill a worker; every request still waiting on it gets an error result."""
        conn = self._conns[worker]
        for slot, _ in waiting.pop(conn, []) if conn is not None else []:
            results[slot] = Transition(error=(kind, message or "worker pipe failed"))
        self._kill(worker)

    def _death_cause(self, slot: int) -> str:
        """'killed by SIGKILL' / 'exit code 3', waiting briefly for the process to be reaped."""
        proc = self._procs[slot]
        if proc is None:
            return "it was stopped after a fault of another of its envs"
        proc.join(timeout=2)
        code = proc.exitcode
        if code is None:
            return "it closed its pipe but is still running"
        if code == UNGUARDED_MAIN_EXIT:
            return ("it re-ran the main script, which has no `if __name__ == \"__main__\":` guard: the process "
                    "executor's workers import it; put the script's work under that guard")
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"

    def reset(self, items: Sequence[tuple[int, ResetOptions]]) -> list[Transition]:
        return self._roundtrip([(slot, ("reset", dict(options)), None) for slot, options in items])

    def advance(self, items: Sequence[tuple[int, Sequence[Any], float | None]]) -> list[Transition]:
        return self._roundtrip([(slot, ("advance", list(actions), dl), dl) for slot, actions, dl in items])

    # --- pipelined: one feeder thread per worker process ---------------------------------
    # A feeder owns its worker: it sends that worker's operations in submission order and
    # waits for each answer (the lockstep ``_roundtrip`` of one request, so deadlines,
    # deaths and kills behave exactly as there); feeders of different workers touch
    # disjoint state. The runner's thread only enqueues.
    _feeds: "list[queue.SimpleQueue[Any]] | None" = None

    def start(self, deliver: Deliver) -> None:
        self._feeding: set[int] = set()  # workers whose feeder is inside a round trip
        self._feeds = [queue.SimpleQueue() for _ in self._procs]
        self._feeders = [threading.Thread(target=self._feed, args=(w, deliver), daemon=True,
                                          name=f"harness-feeder-{w}") for w in range(len(self._procs))]
        for t in self._feeders:
            t.start()

    def submit_reset(self, items: Sequence[tuple[int, ResetOptions]]) -> None:
        for slot, options in items:
            self._feeds[slot // self._k].put((slot, ("reset", dict(options)), None))  # type: ignore[index]

    def submit_advance(self, items: Sequence[tuple[int, Sequence[Any], float | None]]) -> None:
        for slot, actions, dl in items:
            self._feeds[slot // self._k].put((slot, ("advance", list(actions), dl), dl))  # type: ignore[index]

    def _feed(self, worker: int, deliver: Deliver) -> None:
        feed = self._feeds[worker]  # type: ignore[index]
        while True:
            job = feed.get()
            if job is None:
                return
            if self._closing:  # the run ended (an interrupt): what is still queued is dropped
                continue
            slot, msg, _ = job
            if msg is None:
                self._discard_now(slot)
            else:
                self._feeding.add(worker)
                try:
                    result = self._roundtrip([job])[0]
                except Exception:  # noqa: BLE001
                    if self._closing:  # an interrupt closed the pipe under this round trip: the run is over
                        continue
                    result = Transition(error=_error("worker"))
                finally:
                    self._feeding.discard(worker)
                deliver(slot, result)

    def discard(self, slot: int) -> None:
        """Drop a slot's env after a fault. With one env per worker the worker is
        killed (as it always was); otherwise a live worker closes just that env."""
        if self._feeds is not None:
            self._feeds[slot // self._k].put((slot, None, None))
        else:
            self._discard_now(slot)

    def _discard_now(self, slot: int) -> None:
        worker = slot // self._k
        conn = self._conns[worker]
        if self._k > 1 and conn is not None and self._procs[worker].is_alive():
            try:
                conn.send(("drop", slot % self._k))
                return
            except Exception:
                pass
        self._kill(worker)

    def _kill(self, worker: int) -> None:
        slot = worker
        proc, conn = self._procs[slot], self._conns[slot]
        self._procs[slot] = self._conns[slot] = None
        if conn is not None:
            conn.close()
        if proc is not None and proc.is_alive():
            proc.kill()
            proc.join(timeout=5)

    _closing = False

    def close(self) -> None:
        feeders = []
        if self._feeds is not None:
            self._closing = True  # feeders drop what is queued and start no worker from now on
            for feed in self._feeds:
                feed.put(None)
            feeders, self._feeds = self._feeders, None
        busy = set(getattr(self, "_feeding", ()))  # mid round trip (an interrupt): killed, not asked
        for slot in range(len(self._procs)):
            conn = self._conns[slot]
            if conn is not None and slot not in busy:
                try:
                    conn.send(("close",))
                except Exception:
                    pass
        for slot in range(len(self._procs)):
            proc = self._procs[slot]
            if proc is not None and slot not in busy:
                proc.join(timeout=5)
            self._kill(slot)
        for t in feeders:
            t.join(timeout=1)  # each is released by its worker's end


def make_executor(name: str, env_factory: EnvFactory, *, num_workers: int, batch_size: int, **options: Any):
    """Build an executor by registry key (see :mod:`harness.registry.catalog`); ``options``
    are executor-specific settings (``envs_per_worker``), passed only when set."""
    return EXECUTORS.build(name, env_factory=env_factory, num_workers=num_workers, batch_size=batch_size, **options)


def local_executor(*, env_factory: EnvFactory, num_workers: int, batch_size: int, **_: Any) -> LocalExecutor:
    return LocalExecutor(env_factory, slots=max(1, batch_size))


def process_executor(*, env_factory: EnvFactory, num_workers: int, batch_size: int,
                     envs_per_worker: int = 1) -> ProcessExecutor:
    return ProcessExecutor(env_factory, workers=max(1, num_workers), envs_per_worker=envs_per_worker)

