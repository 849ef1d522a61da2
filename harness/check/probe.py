"""What the checks put between the runner and the plugins checked: agent wrappers that jitter
calls (:class:`Jitter`) or count resets and draws (:class:`Probe`), an env factory that
injects one fault (:class:`FaultOnce`), and the probe's own actions: open-loop sequences
(:func:`probe_sequences`, :func:`probe_mix`) and the planner the ``probe`` check runs through
the runner (:class:`ProbeAgent`)."""

from __future__ import annotations

import os
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from harness.check.diffs import plain_action, short
from harness.interfaces import AgentReply, AgentRequest, InvalidOutput
from harness.types import EpisodeSpec


def close_env(env: Any) -> None:
    """Close ``env`` if it can be, swallowing what closing raises."""
    close = getattr(env, "close", None)
    if close is not None:
        try:
            close()
        except Exception:  # noqa: BLE001 - closing must not hide the check's verdict
            pass


# --- probes and wrappers ---------------------------------------------------------------------
class _Forward:
    """Forwards every attribute the runner reads (name, privileged, params, reads_images,
    replan_steps, max_concurrent_calls, action_kinds) to the wrapped agent."""

    def __init__(self, inner: Any):
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def identity(self) -> Mapping[str, Any]:
        return self.inner.identity()

    def reset(self, episode: EpisodeSpec) -> None:
        self.inner.reset(episode)

    def act(self, requests: Sequence[AgentRequest]) -> Any:
        return self.inner.act(requests)


class Jitter(_Forward):
    """Sleeps a random few milliseconds per call (its own RNG, not the agent's), so that
    pipelined calls take shifting sets of ready episodes."""

    def __init__(self, inner: Any):
        super().__init__(inner)
        self._rng = random.Random()

    def act(self, requests: Sequence[AgentRequest]) -> Any:
        time.sleep(self._rng.uniform(0.0, 0.004))
        return self.inner.act(requests)


class Probe(_Forward):
    """Counts ``reset()`` per episode key; notes an ``act()`` for an episode never reset,
    and the actions it returned (all, and fallbacks: output_error with actions)."""

    def __init__(self, inner: Any):
        super().__init__(inner)
        self._lock = threading.Lock()
        self.resets: dict[tuple, int] = {}
        self.acted: set[tuple] = set()
        self.violations: list[str] = []
        self.plans: dict[tuple, list[Any]] = {}
        self.fallbacks: dict[tuple, list[Any]] = {}

    def reset(self, episode: EpisodeSpec) -> None:
        with self._lock:
            self.resets[episode.key] = self.resets.get(episode.key, 0) + 1
        self.inner.reset(episode)

    def act(self, requests: Sequence[AgentRequest]) -> Any:
        with self._lock:
            for r in requests:
                if not self.resets.get(r.episode.key) and not self.violations:
                    self.violations.append(f"act() saw episode {r.episode.episode_id} before its reset()")
                self.acted.add(r.episode.key)
        plans = self.inner.act(requests)
        with self._lock:
            for r, plan in zip(requests, plans if isinstance(plans, (list, tuple)) else ()):
                actions = plan.actions if isinstance(plan, AgentReply) else plan
                drawn = [plain_action(a) for a in actions] if actions is not None else []
                self.plans.setdefault(r.episode.key, []).append(drawn)
                if isinstance(plan, AgentReply) and plan.output_error is not None and drawn:
                    self.fallbacks.setdefault(r.episode.key, []).append(drawn)
        return plans


@dataclass(frozen=True)
class FaultOnce:
    """An env factory whose envs raise at the first step of ``episode_id`` once per run
    (``marker``: a file created when the fault fires, so it fires once across processes)."""

    factory: Callable[[], Any]
    episode_id: str
    marker: str

    def __call__(self) -> Any:
        return _FaultyEnv(self.factory(), self.episode_id, self.marker)


class _FaultyEnv:
    def __init__(self, env: Any, episode_id: str, marker: str):
        self.env, self.episode_id, self.marker = env, episode_id, marker
        self._current: str | None = None

    def __getattr__(self, name: str) -> Any:
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        self._current = (options or {}).get("episode").episode_id if (options or {}).get("episode") else None
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any):
        if self._current == self.episode_id:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                raise RuntimeError("conformance check: injected env fault (the episode must be retried)")
        return self.env.step(action)

    def close(self) -> None:
        close_env(self.env)



# --- the probe's actions ----------------------------------------------------------------------
def _episode_rng(episode: EpisodeSpec, salt: str) -> random.Random:
    return random.Random(f"conformance-probe|{salt}|{episode.suite}|{episode.split}|{episode.episode_id}|{episode.seed}")


def _noop(pool: list[Any]) -> Any:
    return np.zeros_like(np.asarray(pool[0]))


def probe_sequences(pool: list[Any], text: bool, limit: int) -> list[tuple[str, Callable[[EpisodeSpec], list[Any]]]]:
    """Open-loop action sequences (per episode) that must all end the episode within ``limit``."""
    out: list[tuple[str, Callable[[EpisodeSpec], list[Any]]]] = []
    n = limit + 1
    if pool and not text:
        out.append(("no-op actions (zeros)", lambda e: [_noop(pool)] * n))
    for action in pool[:4]:
        out.append((f"one valid action over and over ({short(plain_action(action), 40)})", lambda e, a=action: [a] * n))
    if pool:
        out.append(("random valid actions", lambda e: [_episode_rng(e, "valid").choice(pool) for _ in range(n)]))
    if text:
        out.append(("invalid strings", lambda e: [f"probe: no such action {i}" for i in range(n)]))
        out.append(("unusable output", lambda e: [InvalidOutput(f"probe {i}", "conformance probe: unusable output")
                                                  for i in range(n)]))
    return out


def probe_mix(pool: list[Any], text: bool, limit: int) -> Callable[[EpisodeSpec], list[Any]]:
    """Per episode, a fixed mix of invalid strings, unusable outputs and random valid actions."""
    def actions(e: EpisodeSpec) -> list[Any]:
        rng = _episode_rng(e, "mix")
        out: list[Any] = []
        for i in range(limit + 1):
            roll = rng.random()
            if text and roll < 0.15:
                out.append(f"probe: no such action {i}")
            elif text and roll < 0.25:
                out.append(InvalidOutput(f"probe {i}", "conformance probe: unusable output"))
            elif pool:
                out.append(rng.choice(pool))
            elif not text:
                break
            else:
                out.append(f"probe: no such action {i}")
        return out

    return actions


class ProbeAgent:
    """A planner that sends, per episode, random valid actions (seeded by the episode) after
    an opening chosen by the episode's place in the split: none, one unusable output, or one
    invalid string. What check_suite's ``probe`` runs through the runner."""

    name = "conformance-probe"
    privileged = False
    reads_images = False

    def __init__(self, pool: list[Any], limit: int, keys: Sequence[tuple] = ()):
        self.pool, self.limit = list(pool), limit
        self._opening = {k: i % 3 for i, k in enumerate(keys)}
        self._calls: dict[tuple, int] = {}
        self._rng: dict[tuple, random.Random] = {}

    def identity(self) -> Mapping[str, Any]:
        return {"agent": self.name, "pool": [plain_action(a) for a in self.pool]}

    def reset(self, episode: EpisodeSpec) -> None:
        self._calls[episode.key] = 0
        self._rng[episode.key] = _episode_rng(episode, "runner")

    def act(self, requests: Sequence[AgentRequest]) -> list[Any]:
        out: list[Any] = []
        for r in requests:
            k = self._calls[r.episode.key]
            self._calls[r.episode.key] = k + 1
            opening = self._opening.get(r.episode.key, 1)
            if k == 0 and opening == 1:
                out.append(AgentReply((), raw_output="{not json", output_error="conformance probe: unusable output"))
            elif (k == 0 and opening == 2) or not self.pool:
                out.append([f"probe: no such action {k}"])
            else:
                out.append([self._rng[r.episode.key].choice(self.pool)])
        return out
