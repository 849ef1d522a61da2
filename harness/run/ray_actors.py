"""What runs in Ray's worker processes: :class:`EnvActor` (a few env slots of ``executor=ray``,
driven by :class:`harness.run.executors_ray.RayExecutor`) and the agent actor behind
:class:`RayAgent` (an agent on a Ray actor with its own resources, driven by the runner like a
local one)."""

from __future__ import annotations

import os
import time
from typing import Any, Sequence

from harness.registry.catalog import PLANNERS, POLICIES
from harness.run.allocator import keep_freed_heap
from harness.run.executors import EnvFactory, ResetOptions, Transition, _close_quietly, _error, drive, reset_env
from harness.run.ray_cluster import ensure_ray

#: CPUs each env actor reserves.
ACTOR_CPUS = 1


class EnvActor:
    """Runs in a Ray worker process: a few envs, built lazily by the factory.

    :meth:`run` executes one batch of operations in order and returns their
    Transitions; :meth:`busy` (its own concurrency group, so it answers while
    ``run`` is executing) says which operation of which call runs now.
    """

    def __init__(self, env_factory: EnvFactory):
        keep_freed_heap()
        # Software GL (Mesa's llvmpipe, what EGL gives without a GPU) renders on as many threads
        # as the machine has cores; the actor holds one CPU, so its envs render on one thread
        # (Ray sets OMP_NUM_THREADS the same way). A GPU driver ignores it; an explicit value wins.
        os.environ.setdefault("LP_NUM_THREADS", str(ACTOR_CPUS))
        self._factory = env_factory
        self._envs: dict[int, Any] = {}
        self._busy: tuple[int, int] | None = None

    def run(self, call_id: int, ops: Sequence[tuple]) -> list[Transition]:
        """``ops``: ``("reset", index, options)`` or ``("advance", index, actions, remaining_s)``."""
        arrived = time.monotonic()
        out = []
        try:
            for k, op in enumerate(ops):
                self._busy = (call_id, k)
                out.append(self._reset(op[1], op[2]) if op[0] == "reset" else self._advance(op[1], op[2], op[3], arrived))
        finally:
            self._busy = None
        return out

    def _reset(self, index: int, options: ResetOptions) -> Transition:
        try:
            env = self._envs.get(index)
            if env is None:
                env = self._envs[index] = self._factory()
        except Exception:
            return Transition(error=_error("env"))
        return reset_env(env, options)

    def _advance(self, index: int, actions: Sequence[Any], remaining_s: float | None, arrived: float) -> Transition:
        env = self._envs.get(index)
        if env is None:  # the driver's generations prevent this; never step an env that was not reset
            return Transition(error=("worker", "the Ray actor holding this episode lost its env"))
        return drive(env, actions, None if remaining_s is None else arrived + remaining_s)

    def busy(self) -> tuple[int, int] | None:
        """(call id, index of the operation) running now, else None."""
        return self._busy

    def discard(self, index: int) -> None:
        _close_quietly(self._envs.pop(index, None))

    def pid(self) -> int:
        return os.getpid()


class _AgentActor:
    """Runs in a Ray worker (e.g. one with a GPU): one agent, built from the registry."""

    def __init__(self, kind: str, name: str, params: dict[str, Any], suite: str | None = None):
        # the suite, so that a suite's own agent (planner=oracle) is the one built
        self.agent = (POLICIES if kind == "policy" else PLANNERS).build(name, suite, **params)

    def describe(self) -> dict[str, Any]:
        a = self.agent
        return {"name": a.name, "privileged": bool(getattr(a, "privileged", False)),
                "reads_images": getattr(a, "reads_images", None), "replan_steps": getattr(a, "replan_steps", None),
                "max_concurrent_calls": int(getattr(a, "max_concurrent_calls", 1) or 1),
                "identity": dict(a.identity()),
                # the parsed declaration (a picklable dataclass or Parsed): the runner hashes it
                "params": getattr(a, "params", None)}

    def reset(self, episode: Any) -> None:
        self.agent.reset(episode)

    def act(self, requests: Sequence[Any]) -> Any:
        return self.agent.act(requests)


class RayAgent:
    """An agent that lives on a Ray actor with its own resources (``num_gpus=1``
    puts an in-process model, e.g. the ``hf`` backend, on a GPU node), driven by
    the runner on the driver exactly like a local agent (an agent declaring
    ``max_concurrent_calls``, a server's client, takes that many calls at once there
    too). Its identity and parameters are the wrapped agent's, so a run resumes
    whether the model ran locally or on the cluster. ``suite`` picks a suite's own
    agent (``planner=oracle``).
    """

    def __init__(self, name: str, params: dict[str, Any] | None = None, *, kind: str = "planner",
                 suite: str | None = None, num_gpus: float = 0, num_cpus: float = 1):
        self._ray = ray = ensure_ray()
        remote = ray.remote(num_gpus=num_gpus, num_cpus=num_cpus, max_restarts=0)(_AgentActor)
        self._actor = remote.remote(kind, name, dict(params or {}), suite)
        info = ray.get(self._actor.describe.remote())
        if info["max_concurrent_calls"] > 1:
            # A server's client takes that many calls at once (the runner sends them from its
            # call threads); an actor runs one method at a time unless made with max_concurrency,
            # which only its creation sets: made again, so.
            ray.kill(self._actor, no_restart=True)
            self._actor = remote.options(max_concurrency=info["max_concurrent_calls"]).remote(
                kind, name, dict(params or {}), suite)
            ray.get(self._actor.describe.remote())
            self.max_concurrent_calls = info["max_concurrent_calls"]
        self.name, self.privileged = info["name"], info["privileged"]
        if info["reads_images"] is not None:
            self.reads_images = info["reads_images"]
        if info["replan_steps"] is not None:
            self.replan_steps = info["replan_steps"]
        self._identity = info["identity"]
        #: The wrapped agent's parsed parameters: the run identity hashes them, so a run on Ray
        #: has the run id it has locally.
        self.params = info["params"]

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def reset(self, episode: Any) -> None:
        self._ray.get(self._actor.reset.remote(episode))

    def act(self, requests: Sequence[Any]) -> Any:
        return self._ray.get(self._actor.act.remote(list(requests)))

    def close(self) -> None:
        self._ray.kill(self._actor, no_restart=True)
