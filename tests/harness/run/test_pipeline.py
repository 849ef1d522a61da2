"""The pipelined runner gives every episode the record lockstep gives it.

Each suite's embedded backend, a deterministic agent, the same episodes run
pipelined and lockstep, on the local and the process executor: every record
field but the wall time, and every transcript row but the call's latency and
batch size, must be equal. Scheduling (which episodes shared a call, which env
stepped while the agent thought) must leave no trace in the results.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import random
from typing import Any, Sequence

import numpy as np
import pytest

from harness.registry.catalog import PLANNERS, SUITES
from harness.run.executors import SuiteEnvFactory
from harness.interfaces import AgentReply, AgentRequest
from harness.run.runner import Runner
from harness.store import ResultStore
from harness.types import EpisodeSpec, RunSpec

#: Record fields that may differ with scheduling.
_TIMING = {"wall_time_s"}
_CALL_TIMING = {"latency_s", "batch"}


def _records(store: ResultStore) -> dict[str, dict[str, Any]]:
    out = {}
    for r in store.records():
        row = {k: v for k, v in dataclasses.asdict(r).items() if k not in _TIMING}
        out[r.episode_id] = row
    return out


def _transcripts(store: ResultStore) -> list[dict[str, Any]]:
    rows = [{k: v for k, v in row.items() if k not in _CALL_TIMING} for row in store.transcripts()]
    return sorted(rows, key=lambda r: (str(r.get("episode_id")), r.get("call", 0)))


def _run(tmp_path, name: str, suite_name: str, params: dict, agent_factory, **kw) -> tuple[dict, list]:
    suite = SUITES.build(suite_name, **params)
    spec = RunSpec(suite=suite_name, split=kw.pop("split"), agent="test", variant="v", suite_params=params, **kw)
    factory = SuiteEnvFactory(suite_name, params) if spec.executor == "process" else None
    with ResultStore(tmp_path / name) as store:
        summary = Runner(spec, suite, agent_factory(), store, env_factory=factory).run()
        assert summary.finished == summary.total - summary.skipped
        return _records(store), _transcripts(store)


def _compare(tmp_path, suite_name: str, params: dict, agent_factory, *, executors=("local", "process"), **kw):
    lock, lock_t = _run(tmp_path, "lockstep", suite_name, params, agent_factory, pipeline=False, **kw)
    assert lock, "no episode ran"
    for executor in executors:
        extra = {"executor": executor}
        if executor == "process":
            extra.update(num_workers=2, envs_per_worker=2)
        elif executor == "ray":
            extra.update(num_workers=2)
        pipe, pipe_t = _run(tmp_path, f"pipelined-{executor}", suite_name, params, agent_factory,
                            pipeline=True, batch_wait_s=0.0, **extra, **kw)
        assert pipe.keys() == lock.keys()
        for episode_id, record in lock.items():
            assert pipe[episode_id] == record, f"{executor}: {episode_id} differs pipelined"
        assert pipe_t == lock_t, f"{executor}: transcripts differ pipelined"
    return lock


class Jittery:
    """Wraps a real agent; sleeps a random few milliseconds per call, so that pipelined
    calls take different, shifting sets of ready episodes (the sleep's RNG is not the
    agent's: the plans stay the agent's own)."""

    def __init__(self, inner: Any):
        self.inner, self._rng = inner, random.Random()
        self.name, self.privileged = inner.name, inner.privileged
        for attr in ("reads_images", "replan_steps"):
            if hasattr(inner, attr):
                setattr(self, attr, getattr(inner, attr))

    def identity(self):
        return self.inner.identity()

    def reset(self, episode: EpisodeSpec) -> None:
        self.inner.reset(episode)

    def act(self, requests: Sequence[AgentRequest]) -> Any:
        import time

        time.sleep(self._rng.uniform(0.0, 0.01))
        return self.inner.act(requests)


EB_ALFRED = {"render": False, "generated_per_split": 12}


@pytest.mark.parametrize("agent, jitter", [("oracle_json", True), ("random", True), ("random", False)])
def test_eb_alfred_records_equal_pipelined_and_lockstep(tmp_path, agent, jitter):
    """oracle_json: model-style outputs (transcripts, invalid-output paths); random: a
    seeded per-episode RNG, many short calls; without the jitter its calls are cheap
    enough to be made on the runner's own thread (harness.run.calls.INLINE_BELOW_S)."""
    make = (lambda: Jittery(PLANNERS.build(agent, suite="eb_alfred"))) if jitter else \
        (lambda: PLANNERS.build(agent, suite="eb_alfred"))
    records = _compare(tmp_path, "eb_alfred", EB_ALFRED, make, split="seen", limit=8, batch_size=3)
    if agent == "oracle_json":
        assert all(r["success"] for r in records.values())


def test_alfred_records_equal_pipelined_and_lockstep(tmp_path):
    _compare(tmp_path, "alfred", {"render": False, "generated_per_split": 6},
             lambda: Jittery(PLANNERS.build("oracle", suite="alfred")), split="seen", limit=6, batch_size=3)


class StateFeedback:
    """A deterministic LIBERO policy that reads the observation (the end effector's
    position) and a per-episode RNG: a record depends on every observation it saw."""

    name, privileged, reads_images, replan_steps = "feedback", False, False, None

    def __init__(self):
        self._rngs: dict = {}

    def identity(self):
        return {"name": self.name}

    def reset(self, episode: EpisodeSpec) -> None:
        self._rngs[episode.key] = np.random.default_rng(episode.seed)

    def act(self, requests: Sequence[AgentRequest]) -> list:
        out = []
        for r in requests:
            state = np.asarray(r.observation["state"], dtype=np.float64)
            noise = self._rngs[r.episode.key].uniform(-0.3, 0.3, size=(5, 7))
            chunk = np.clip(noise + np.r_[-state[:3] * 0.5, 0, 0, 0, 0], -1, 1)
            out.append(AgentReply(actions=[list(map(float, a)) for a in chunk]))
        return out


@pytest.mark.slow
@pytest.mark.ci
def test_libero_records_equal_pipelined_and_lockstep(tmp_path):
    from tests.envs.libero.conftest import require_libero

    require_libero()
    _compare(tmp_path, "libero", {"max_steps": 20, "trials": 2, "tasks": [0]},
             lambda: Jittery(StateFeedback()), split="libero_spatial", batch_size=2, executors=("local",))


@pytest.mark.slow
@pytest.mark.ci
def test_eb_manipulation_records_equal_pipelined_and_lockstep(tmp_path):
    if importlib.util.find_spec("mujoco") is None:
        pytest.skip("EB-Manipulation needs the eb_manipulation extra (mujoco)")
    _compare(tmp_path, "eb_manipulation", {"render": False},
             lambda: Jittery(PLANNERS.build("random", suite="eb_manipulation")), split="base", limit=3, batch_size=3,
             executors=("local",))


class ConcurrentRandom(Jittery):
    """The random planner, declaring concurrent calls; counts the calls inside ``act`` at once."""

    max_concurrent_calls = 3

    def __init__(self):
        super().__init__(PLANNERS.build("random"))
        import threading

        self._lock, self.inside, self.most, self.sizes = threading.Lock(), 0, 0, []

    def act(self, requests):
        import time

        with self._lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
            self.sizes.append(len(requests))
        time.sleep(0.02)
        try:
            return self.inner.act(requests)
        finally:
            with self._lock:
                self.inside -= 1


def test_concurrent_calls_one_request_each_up_to_the_declared_number(tmp_path):
    """An agent declaring ``max_concurrent_calls`` (a server's client) gets each ready
    request as a call of its own, that many at once, never more; the records are still
    lockstep's."""
    agent = ConcurrentRandom()
    suite = SUITES.build("eb_alfred", **EB_ALFRED)
    spec = RunSpec(suite="eb_alfred", split="seen", agent="test", variant="v", limit=8, batch_size=6,
                   suite_params=EB_ALFRED)
    with ResultStore(tmp_path / "concurrent") as store:
        Runner(spec, suite, agent, store).run()
        records = _records(store)
    assert set(agent.sizes) == {1} and agent.most == 3
    lockstep, _ = _run(tmp_path, "lockstep", "eb_alfred", EB_ALFRED, lambda: Jittery(PLANNERS.build("random")),
                       split="seen", limit=8, batch_size=6, pipeline=False)
    assert records == lockstep


def test_vlm_planner_declares_its_servers_concurrency():
    pytest.importorskip("openai", reason="the openai backend needs the `models` extra")
    from planners.vlm.planner import VLMPlanner

    planner = VLMPlanner(suite="eb_alfred", backend="openai", model="m", base_url="http://127.0.0.1:9/v1", max_concurrency=5)
    assert planner.max_concurrent_calls == 5
