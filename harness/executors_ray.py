"""``executor=ray``: envs on Ray actors, on one machine or a cluster (``ray`` extra).

Each actor (one CPU) owns several env slots; slot ``s`` lives on actor
``s % actors`` as env ``s // actors``. The driver keeps everything else: the
agent (one batched call serves every waiting episode, as with ``local``), the
deadlines, retries and the single SQLite writer. An actor runs the same
:func:`harness.executors.reset_env` / :func:`harness.executors.drive` code as
the other executors, so the same seeds give the same records.

Faults:

* an actor that dies (killed, out of memory, its node lost) turns the call in
  flight into a ``worker`` fault for that slot, which the runner retries on a
  fresh actor (``max_retries``) and then records as an error; the other slots
  that lived on it get the same fault at their next call;
* an episode past its deadline (``episode_timeout_s``) gets its actor killed
  (a hung simulator step cannot be interrupted otherwise) and a ``timeout``
  record; the actor's other episodes are retried.

Cluster: the executor joins the cluster ``ray.init()`` finds: ``RAY_ADDRESS``
(e.g. ``RAY_ADDRESS=auto`` on a node of a cluster started with ``ray start``),
else a new local one-node cluster. Deadlines cross machines as remaining
seconds, never as clock readings.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any, Sequence

from harness.allocator import keep_freed_heap
from harness.executors import EnvFactory, ResetOptions, Transition, _close_quietly, _error, drive, reset_env


class EnvActor:
    """Runs in a Ray worker process: a few envs, built lazily by the factory."""

    def __init__(self, env_factory: EnvFactory):
        keep_freed_heap()
        self._factory = env_factory
        self._envs: dict[int, Any] = {}

    def _env(self, index: int) -> Any:
        env = self._envs.get(index)
        if env is None:
            env = self._envs[index] = self._factory()
        return env

    def reset(self, index: int, options: ResetOptions) -> Transition:
        try:
            env = self._env(index)
        except Exception:
            return Transition(error=_error("env"))
        return reset_env(env, options)

    def advance(self, index: int, actions: Sequence[Any], remaining_s: float | None) -> Transition:
        deadline = None if remaining_s is None else time.monotonic() + remaining_s
        return drive(self._envs[index], actions, deadline)

    def discard(self, index: int) -> None:
        _close_quietly(self._envs.pop(index, None))

    def pid(self) -> int:
        import os

        return os.getpid()


def ensure_ray() -> Any:
    """Import Ray and join (or start) a cluster; a one-line error without the extra."""
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError("executor=ray needs Ray: pip install -e '.[ray]'") from exc
    if not ray.is_initialized():
        # ray.init() honours RAY_ADDRESS; without it, a local cluster on this machine.
        ray.init(include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False,
                 configure_logging=True)
    return ray


class RayExecutor:
    name = "ray"

    def __init__(self, env_factory: EnvFactory, actors: int, envs_per_actor: int):
        self._ray = ray = ensure_ray()
        self._factory = env_factory
        self._remote = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(EnvActor)
        self.actors = max(1, actors)
        self.capacity = self.actors * max(1, envs_per_actor)
        self._handles: list[Any] = [None] * self.actors
        self._generation = [0] * self.actors  # bumped when an actor is lost
        self._slot_generation: list[int | None] = [None] * self.capacity

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
        calls = []
        for slot, options in items:
            a, i = self._where(slot)
            self._slot_generation[slot] = self._generation[a]
            calls.append((slot, lambda a=a, i=i, o=dict(options): self._actor(a).reset.remote(i, o), None))
        return self._collect(calls)

    def advance(self, items: Sequence[tuple[int, Sequence[Any], float | None]]) -> list[Transition]:
        calls = []
        for slot, actions, deadline in items:
            a, i = self._where(slot)
            if self._slot_generation[slot] != self._generation[a]:
                calls.append((slot, Transition(error=("worker", "the Ray actor holding this episode died")), None))
                continue
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            calls.append((slot, lambda a=a, i=i, acts=list(actions), r=remaining: self._actor(a).advance.remote(i, acts, r),
                          deadline))
        return self._collect(calls)

    def _collect(self, calls: list[tuple[int, Any, float | None]]) -> list[Transition]:
        ray = self._ray
        results: dict[int, Transition] = {}
        pending: dict[Any, tuple[int, float | None]] = {}
        for slot, submit, deadline in calls:
            if isinstance(submit, Transition):
                results[slot] = submit
                continue
            try:
                ref = submit()
            except Exception as exc:  # the agent's actions cannot be serialized
                results[slot] = Transition(error=(
                    "agent", f"actions cannot be sent to a Ray actor: {type(exc).__name__}: {exc}"))
                continue
            pending[ref] = (slot, deadline)
        while pending:
            # An actor runs its calls in order: only the first pending call on each
            # actor is executing, and only its deadline can condemn the actor.
            heads: dict[int, Any] = {}
            for ref, (slot, _) in pending.items():
                heads.setdefault(self._where(slot)[0], ref)
            deadlines = [pending[ref][1] for ref in heads.values() if pending[ref][1] is not None]
            timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            # All results are needed before the runner's next agent call: wait for all,
            # or until the nearest deadline passes.
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=timeout)
            for ref in ready:
                slot, _ = pending.pop(ref)
                results[slot] = self._result(ref, slot)
            if not pending:
                break
            now = time.monotonic()
            for a, head in heads.items():
                if head not in pending:
                    continue
                slot, deadline = pending[head]
                if deadline is None or now <= deadline:
                    continue
                del pending[head]
                results[slot] = Transition(error=("timeout", "episode exceeded its wall-clock limit; Ray actor killed"))
                # The episodes queued behind it on the same actor did nothing wrong: a
                # worker fault, which the runner retries on a fresh actor.
                for ref, (other, _) in list(pending.items()):
                    if self._where(other)[0] == a:
                        del pending[ref]
                        results[other] = Transition(error=(
                            "worker", "Ray actor killed: another episode on it passed its deadline"))
                self._lose(a)
        return [results[slot] for slot, _, _ in calls]

    def _result(self, ref: Any, slot: int) -> Transition:
        from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

        try:
            return self._ray.get(ref)
        except RayActorError as exc:
            a = self._where(slot)[0]
            if self._handles[a] is not None and self._slot_generation[slot] == self._generation[a]:
                self._lose(a)
            return Transition(error=("worker", f"Ray actor died ({_first_line(exc)})"))
        except (RayTaskError, GetTimeoutError) as exc:
            return Transition(error=("worker", f"Ray task failed: {_first_line(exc)}"))

    def discard(self, slot: int) -> None:
        """Drop a slot's env after a fault; the next reset builds a fresh one."""
        a, i = self._where(slot)
        if self._handles[a] is not None and self._slot_generation[slot] == self._generation[a]:
            try:
                self._handles[a].discard.remote(i)
            except Exception:
                pass
        self._slot_generation[slot] = None

    def close(self) -> None:
        for a in range(self.actors):
            self._lose(a)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def ray_executor(*, env_factory: EnvFactory, num_workers: int, batch_size: int) -> RayExecutor:
    """``num_workers`` actors, ``ceil(batch_size / num_workers)`` envs on each."""
    actors = max(1, num_workers)
    return RayExecutor(env_factory, actors=actors, envs_per_actor=max(1, math.ceil(batch_size / actors)))


class _AgentActor:
    """Runs in a Ray worker (e.g. one with a GPU): one agent, built from the registry."""

    def __init__(self, kind: str, name: str, params: dict[str, Any]):
        from harness.catalog import PLANNERS, POLICIES

        self.agent = (POLICIES if kind == "policy" else PLANNERS).build(name, **params)

    def describe(self) -> dict[str, Any]:
        a = self.agent
        return {"name": a.name, "privileged": bool(getattr(a, "privileged", False)),
                "reads_images": getattr(a, "reads_images", None), "replan_steps": getattr(a, "replan_steps", None),
                "identity": dict(a.identity())}

    def reset(self, episode: Any) -> None:
        self.agent.reset(episode)

    def act(self, requests: Sequence[Any]) -> Any:
        return self.agent.act(requests)


class RayAgent:
    """An agent that lives on a Ray actor with its own resources (``num_gpus=1``
    puts an in-process model, e.g. the ``hf`` backend, on a GPU node), driven by
    the runner on the driver exactly like a local agent: one batched ``act`` per
    round for every waiting episode. Its identity is the wrapped agent's, so a
    run resumes whether the model ran locally or on the cluster.
    """

    def __init__(self, name: str, params: dict[str, Any] | None = None, *, kind: str = "planner",
                 num_gpus: float = 0, num_cpus: float = 1):
        self._ray = ray = ensure_ray()
        remote = ray.remote(num_gpus=num_gpus, num_cpus=num_cpus, max_restarts=0)(_AgentActor)
        self._actor = remote.remote(kind, name, dict(params or {}))
        info = ray.get(self._actor.describe.remote())
        self.name, self.privileged = info["name"], info["privileged"]
        if info["reads_images"] is not None:
            self.reads_images = info["reads_images"]
        if info["replan_steps"] is not None:
            self.replan_steps = info["replan_steps"]
        self._identity = info["identity"]

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def reset(self, episode: Any) -> None:
        self._ray.get(self._actor.reset.remote(episode))

    def act(self, requests: Sequence[Any]) -> Any:
        return self._ray.get(self._actor.act.remote(list(requests)))

    def close(self) -> None:
        self._ray.kill(self._actor, no_restart=True)
