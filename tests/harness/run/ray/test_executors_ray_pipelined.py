"""RayExecutor's pipelined interface (start / submit_reset / submit_advance /
deliver) at executor level, on the real local cluster and the real EB-ALFRED
env (household backend): one delivery per submitted slot, from the collector
thread, with submission returning at once; deadlines as in lockstep (a hung
step: its slot ``timeout``, its actor's other slot ``worker``, the other actor
untouched); and the same Transitions lockstep and pipelined."""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass

import pytest

pytest.importorskip("ray", reason="executor=ray needs the ray extra: pip install -e '.[ray]'")

from harness.registry.catalog import PLANNERS  # noqa: E402
from harness.run.executors import SuiteEnvFactory, Transition  # noqa: E402
from harness.run.executors_ray import RayExecutor  # noqa: E402
from harness.interfaces import AgentRequest  # noqa: E402

SUITE_PARAMS = {"render": False, "generated_per_split": 40}
# serial: a Ray cluster takes the machine's cores and memory; parallel test workers would starve it
pytestmark = [pytest.mark.slow, pytest.mark.ci, pytest.mark.serial]


@pytest.fixture(scope="module")
def episodes():
    from envs.eb_alfred.suite import EBAlfredSuite

    return EBAlfredSuite(**SUITE_PARAMS).episodes("seen")


@dataclass
class StallingEnv:
    """The real env, except that every step of episode ``stall_episode`` first sleeps ``stall_s``."""

    inner: object
    stall_episode: str
    stall_s: float

    def reset(self, *, seed=None, options=None):
        self._current = options["episode"].episode_id
        return self.inner.reset(seed=seed, options=options)

    def step(self, action):
        if self._current == self.stall_episode:
            time.sleep(self.stall_s)
        return self.inner.step(action)

    def close(self):
        self.inner.close()


@dataclass(frozen=True)
class StallingEnvFactory:
    stall_episode: str
    stall_s: float

    def __call__(self):
        return StallingEnv(SuiteEnvFactory("eb_alfred", SUITE_PARAMS)(), self.stall_episode, self.stall_s)


class Deliveries:
    """A ``deliver`` that checks each delivery answers exactly one submitted operation."""

    def __init__(self):
        self.queue: queue.Queue = queue.Queue()
        self.in_flight: set[int] = set()
        self.threads: set[str] = set()
        self.bad: list[str] = []
        self._lock = threading.Lock()

    def submitted(self, slots):
        with self._lock:
            assert not self.in_flight & set(slots)
            self.in_flight |= set(slots)

    def __call__(self, slot: int, tr: Transition) -> None:
        with self._lock:
            if slot not in self.in_flight:
                self.bad.append(f"delivery for slot {slot} with nothing in flight")
            self.in_flight.discard(slot)
            self.threads.add(threading.current_thread().name)
        self.queue.put((slot, tr, time.monotonic()))

    def take(self, n: int, timeout: float = 60) -> dict[int, tuple[Transition, float]]:
        out = {}
        for _ in range(n):
            slot, tr, t = self.queue.get(timeout=timeout)
            out[slot] = (tr, t)
        return out


def _request(episode, tr: Transition, history: list) -> AgentRequest:
    return AgentRequest(episode=episode, observation=tr.observation, info=tr.info, history=tuple(history))


def _continues(tr: Transition) -> bool:
    return tr.error is None and not tr.done


def run_lockstep(executor, agent, eps, max_rounds: int) -> dict[str, list[Transition]]:
    """Every episode on its own slot, all advanced together each round."""
    trace = {e.episode_id: [] for e in eps}
    history = {e.episode_id: [] for e in eps}
    live = {}
    for (slot, e), tr in zip(enumerate(eps), executor.reset([(s, {"episode": e}) for s, e in enumerate(eps)])):
        trace[e.episode_id].append(tr)
        agent.reset(e)
        if _continues(tr):
            live[slot] = (e, tr)
    for _ in range(max_rounds):
        if not live:
            break
        moves = []
        for slot, (e, tr) in live.items():
            moves.append((slot, agent.act([_request(e, tr, history[e.episode_id])])[0], None))
        for (slot, _, _), tr in zip(moves, executor.advance(moves)):
            e = live[slot][0]
            trace[e.episode_id].append(tr)
            history[e.episode_id] += tr.history
            live[slot] = (e, tr)
            if not _continues(tr):
                del live[slot]
    return trace


def run_pipelined(executor, agent, eps, max_rounds: int) -> tuple[dict[str, list[Transition]], Deliveries]:
    """Every episode on its own slot, each advanced as soon as its previous result is in."""
    trace = {e.episode_id: [] for e in eps}
    history = {e.episode_id: [] for e in eps}
    d = Deliveries()
    executor.start(d)
    d.submitted(range(len(eps)))
    executor.submit_reset([(s, {"episode": e}) for s, e in enumerate(eps)])
    for e in eps:
        agent.reset(e)
    rounds = {s: 0 for s in range(len(eps))}
    live = len(eps)
    while live:
        slot, tr, _ = d.queue.get(timeout=60)
        e = eps[slot]
        trace[e.episode_id].append(tr)
        history[e.episode_id] += tr.history
        if not _continues(tr) or rounds[slot] == max_rounds:
            live -= 1
            continue
        rounds[slot] += 1
        actions = agent.act([_request(e, tr, history[e.episode_id])])[0]
        d.submitted([slot])
        executor.submit_advance([(slot, actions, None)])
    return trace, d


def test_records_identical_lockstep_and_pipelined(cluster, episodes):
    eps = episodes[:4]
    agent = PLANNERS.build("random")
    lock = RayExecutor(SuiteEnvFactory("eb_alfred", SUITE_PARAMS), actors=2, envs_per_actor=2)
    try:
        lockstep = run_lockstep(lock, agent, eps, max_rounds=12)
    finally:
        lock.close()
    pipe = RayExecutor(SuiteEnvFactory("eb_alfred", SUITE_PARAMS), actors=2, envs_per_actor=2)
    try:
        pipelined, d = run_pipelined(pipe, agent, eps, max_rounds=12)
    finally:
        pipe.close()
    assert not d.bad and not d.in_flight
    assert all(len(t) > 3 for t in lockstep.values())  # several steps each, not just resets
    assert all(tr.error is None for t in lockstep.values() for tr in t)
    assert pipelined == lockstep


def test_every_submit_gets_one_delivery_and_submission_returns_at_once(cluster, episodes):
    eps = episodes[:4]
    slow = eps[1].episode_id  # slot 1: actor 1, env 0
    ex = RayExecutor(StallingEnvFactory(slow, 1.5), actors=2, envs_per_actor=2)
    try:
        d = Deliveries()
        ex.start(d)
        d.submitted(range(4))
        ex.submit_reset([(s, {"episode": e}) for s, e in enumerate(eps)])
        resets = d.take(4)
        assert sorted(resets) == [0, 1, 2, 3] and all(tr.error is None for tr, _ in resets.values())
        agent = PLANNERS.build("random")
        moves = [(s, agent.act([_request(e, resets[s][0], [])])[0], None) for s, e in enumerate(eps)]
        d.submitted(range(4))
        t0 = time.monotonic()
        ex.submit_advance(moves)
        submit_s = time.monotonic() - t0
        got = d.take(4)
        assert submit_s < 0.5  # the stalled step takes 1.5 s; submission did not wait for it
        # Actor 0's slots (0, 2) come back while slot 1 stalls; slot 3 shares slot 1's call on actor 1.
        assert got[1][1] - t0 >= 1.5 and got[3][1] >= got[1][1] - 0.05
        assert all(got[s][1] - t0 < 1.5 for s in (0, 2))
        assert all(tr.error is None and tr.steps == 1 for tr, _ in got.values())
        time.sleep(0.3)
        assert d.queue.empty() and not d.bad and not d.in_flight  # exactly one delivery each
        assert d.threads == {"ray-executor-collector"}
    finally:
        ex.close()


@pytest.mark.parametrize("mode", ["pipelined", "lockstep"])
@pytest.mark.parametrize("hung_first", [True, False], ids=["hung-first", "hung-second"])
def test_hung_step_times_out_its_slot_at_the_deadline(cluster, episodes, mode, hung_first):
    """Slots 0 and 2 share actor 0; slot 0's step hangs. It gets ``timeout`` at its
    deadline whether it runs first or second in the actor's call (then slot 2 has
    the earlier deadline and is finished when it passes: only the running slot can
    condemn the actor); slot 2 gets a ``worker`` fault; slots 1 and 3 (actor 1) step
    normally."""
    eps = episodes[:4]
    ex = RayExecutor(StallingEnvFactory(eps[0].episode_id, 120.0), actors=2, envs_per_actor=2)
    try:
        d = Deliveries()
        if mode == "pipelined":
            ex.start(d)
            d.submitted(range(4))
            ex.submit_reset([(s, {"episode": e}) for s, e in enumerate(eps)])
            resets = {s: tr for s, (tr, _) in d.take(4).items()}
        else:
            resets = dict(enumerate(ex.reset([(s, {"episode": e}) for s, e in enumerate(eps)])))
        agent = PLANNERS.build("random")
        acts = {s: agent.act([_request(e, resets[s], [])])[0] for s, e in enumerate(eps)}
        t0 = time.monotonic()
        deadline = {0: t0 + 3.0, 2: t0 + (4.0 if hung_first else 1.0), 1: None, 3: t0 + 1.0}
        order = [0, 2, 1, 3] if hung_first else [2, 0, 1, 3]
        moves = [(s, acts[s], deadline[s]) for s in order]
        if mode == "pipelined":
            d.submitted(order)
            ex.submit_advance(moves)
            got = d.take(4, timeout=30)
        else:
            results = ex.advance(moves)
            now = time.monotonic()
            got = {s: (tr, now) for (s, _, _), tr in zip(moves, results)}
        elapsed = got[0][1] - t0
        assert got[0][0].error[0] == "timeout" and "Ray actor killed" in got[0][0].error[1]
        assert 3.0 <= elapsed < 3.0 + 4.0  # at the deadline (a probe answers within 1 s), not after the 120 s hang
        assert got[2][0].error == ("worker", "Ray actor killed: another episode on it passed its deadline")
        assert got[1][0].error is None and got[1][0].steps == 1
        assert got[3][0].error is None and got[3][0].steps == 1
        # Actor 1 survived; actor 0's slots report its loss at their next step, and a reset builds a fresh one.
        after = ex.advance([(1, acts[1], None), (0, acts[0], None)]) if mode == "lockstep" else None
        if after is not None:
            assert after[0].error is None and after[1].error[0] == "worker"
        assert not d.bad
    finally:
        ex.close()
