"""The shared runner, end to end, on the real EB-ALFRED suite (household backend).

Fault-injection wrappers below wrap the real env; they are not fake simulators.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from harness.registry.catalog import PLANNERS
from harness.interfaces import AgentRequest
from harness.run.runner import Runner, run_id_of, run_identity
from harness.store import ResultStore
from harness.types import RunSpec

SPLIT = "seen"


@pytest.fixture(scope="module")
def suite():
    from envs.eb_alfred.suite import EBAlfredSuite

    return EBAlfredSuite(render=False, generated_per_split=40)


def spec(**kw) -> RunSpec:
    base = dict(suite="eb_alfred", split=SPLIT, agent="oracle", variant="oracle", limit=8, batch_size=4)
    base.update(kw)
    return RunSpec(**base)


class CountingAgent:
    """Wraps a real agent; records the size of every batched call."""

    def __init__(self, inner):
        self.inner = inner
        self.name, self.privileged = inner.name, inner.privileged
        self.batches: list[int] = []

    def identity(self):
        return self.inner.identity()

    def reset(self, episode):
        self.inner.reset(episode)

    def act(self, requests):
        self.batches.append(len(requests))
        return self.inner.act(requests)


class RaisingAgent(CountingAgent):
    def __init__(self, inner, bad_episode: str):
        super().__init__(inner)
        self.bad = bad_episode

    def act(self, requests):
        if any(r.episode.episode_id == self.bad for r in requests):
            raise RuntimeError("model server said no")
        return self.inner.act(requests)


class EmptyPlanAgent(CountingAgent):
    def act(self, requests):
        return [[] for _ in requests]


#: How long a "hang" fault sleeps: longer than a killed worker takes to be noticed under any load,
#: short enough that a test whose kill is broken fails rather than waiting for pytest's timeout.
HANG_S = 120


@dataclass
class FaultyEnv:
    """Wraps a real env and injects a fault into chosen episodes."""

    inner: object
    mode: str
    bad_episode: str
    counter: str  # file holding how many more times to fail (shared across envs and processes)

    def _should_fail(self) -> bool:
        with open(self.counter) as f:
            left = int(f.read())
        if left > 0:
            with open(self.counter, "w") as f:
                f.write(str(left - 1))
        return left > 0

    def reset(self, *, seed=None, options=None):
        self._current = options["episode"].episode_id
        return self.inner.reset(seed=seed, options=options)

    def step(self, action):
        if self._current == self.bad_episode and self._should_fail():
            if self.mode == "raise":
                raise RuntimeError("simulator crashed")
            time.sleep(HANG_S)  # "hang"
        return self.inner.step(action)

    def close(self):
        self.inner.close()


@dataclass(frozen=True)
class FaultyEnvFactory:
    """Picklable, for the process executor."""

    mode: str
    bad_episode: str
    counter: str

    @classmethod
    def create(cls, tmp_path, mode: str, bad_episode: str, failures: int) -> "FaultyEnvFactory":
        path = tmp_path / f"failures-{mode}-{failures}"
        path.write_text(str(failures))
        return cls(mode, bad_episode, str(path))

    def __call__(self):
        from envs.eb_alfred.suite import EBAlfredSuite

        inner = EBAlfredSuite(render=False, generated_per_split=40).make_env()
        return FaultyEnv(inner, self.mode, self.bad_episode, self.counter)


def first_ids(suite, n):
    return [e.episode_id for e in suite.episodes(SPLIT)[:n]]


@pytest.mark.parametrize("pipeline", [False, True])
def test_oracle_end_to_end_with_batched_calls(suite, tmp_path, pipeline):
    agent = CountingAgent(PLANNERS.build("oracle", suite="eb_alfred"))
    with ResultStore(tmp_path) as store:
        summary = Runner(spec(pipeline=pipeline), suite, agent, store).run()
        records = store.records()
    assert summary.total == 8 and summary.finished == 8 and summary.errors == 0
    assert len(records) == 8 and all(r.success for r in records)
    assert all(r.gc_satisfied == r.gc_total > 0 for r in records)
    assert all(r.steps > 0 and r.agent_calls >= 1 for r in records)
    if pipeline:  # calls take the episodes that are ready, never more than batch_size
        assert 1 <= max(agent.batches) <= 4 and sum(agent.batches) == sum(r.agent_calls for r in records)
    else:
        assert max(agent.batches) == 4  # one call served every waiting episode


def test_resume_skips_recorded_episodes(suite, tmp_path):
    with ResultStore(tmp_path) as store:
        first = Runner(spec(limit=3), suite, PLANNERS.build("oracle", suite="eb_alfred"), store).run()
        second = Runner(spec(limit=7), suite, PLANNERS.build("oracle", suite="eb_alfred"), store).run()
        records = store.records()
    assert first.run_id == second.run_id
    assert (second.skipped, second.finished) == (3, 4)
    assert len(records) == len({r.key for r in records}) == 7


def test_two_runs_in_one_store_each_resume_only_their_own(suite, tmp_path):
    """Two agents write to one output directory; each rerun skips exactly its own
    recorded episodes. Mutation caught: ``completed_keys`` ignoring ``run_id``
    (the random run would skip the episodes the oracle recorded)."""
    def oracle(limit):
        return Runner(spec(limit=limit), suite, PLANNERS.build("oracle", suite="eb_alfred"), store).run()

    def random(limit):
        return Runner(spec(agent="random", variant="random", limit=limit), suite, PLANNERS.build("random"),
                      store).run()

    with ResultStore(tmp_path) as store:
        a1, b1 = oracle(3), random(5)
        a2, b2 = oracle(5), random(6)
        records = store.records()
    assert a1.run_id == a2.run_id != b1.run_id == b2.run_id
    assert (a1.skipped, a1.finished) == (0, 3)
    assert (b1.skipped, b1.finished) == (0, 5)
    assert (a2.skipped, a2.finished) == (3, 2)
    assert (b2.skipped, b2.finished) == (5, 1)
    by_run = {run: sorted(r.episode_id for r in records if r.run_id == run) for run in (a1.run_id, b1.run_id)}
    assert by_run[a1.run_id] == sorted(first_ids(suite, 5))
    assert by_run[b1.run_id] == sorted(first_ids(suite, 6))
    assert all(r.success for r in records if r.run_id == a1.run_id)
    assert {r.variant for r in records if r.run_id == b1.run_id} == {"random"}


def test_run_identity_ignores_workers_but_not_agent_or_suite(suite):
    agent = PLANNERS.build("oracle", suite="eb_alfred")
    a = run_id_of(run_identity(spec(), suite, agent))
    assert a == run_id_of(run_identity(spec(num_workers=8, batch_size=1, executor="process", limit=3), suite, agent))
    assert a != run_id_of(run_identity(spec(variant="other"), suite, agent))
    assert a != run_id_of(run_identity(spec(split="unseen"), suite, agent))


def test_agent_exception_is_an_error_record_for_that_episode_only(suite, tmp_path):
    bad = first_ids(suite, 3)[1]
    agent = RaisingAgent(PLANNERS.build("oracle", suite="eb_alfred"), bad)
    with ResultStore(tmp_path) as store:
        summary = Runner(spec(limit=5), suite, agent, store).run()
        records = {r.episode_id: r for r in store.records()}
    assert summary.finished == 5 and summary.errors == 1
    assert records[bad].error_kind == "agent" and "model server said no" in records[bad].error_message
    assert not records[bad].success
    assert all(r.success for k, r in records.items() if k != bad)


def test_empty_plan_ends_episode(suite, tmp_path):
    summary = Runner(spec(limit=2), suite, EmptyPlanAgent(PLANNERS.build("oracle", suite="eb_alfred")), None).run()
    assert [r.termination for r in summary.records] == ["empty_plan", "empty_plan"]
    assert not any(r.success for r in summary.records) and all(r.steps == 0 for r in summary.records)


@pytest.mark.parametrize("executor", ["local", "process"])
def test_simulator_fault_is_retried_then_recorded(suite, tmp_path, executor):
    bad = first_ids(suite, 2)[0]
    # one failure: the retry succeeds
    factory = FaultyEnvFactory.create(tmp_path, "raise", bad, failures=1)
    s = spec(limit=3, executor=executor, num_workers=2, max_retries=1)
    summary = Runner(s, suite, PLANNERS.build("oracle", suite="eb_alfred"), None, env_factory=factory).run()
    rec = {r.episode_id: r for r in summary.records}
    assert rec[bad].attempts == 2
    assert all(r.success for r in summary.records)
    # always failing: an error record after max_retries, never a crash
    factory = FaultyEnvFactory.create(tmp_path, "raise", bad, failures=10**6)
    summary = Runner(s, suite, PLANNERS.build("oracle", suite="eb_alfred"), None, env_factory=factory).run()
    rec = {r.episode_id: r for r in summary.records}
    assert summary.finished == 3
    assert rec[bad].error_kind == "env" and "simulator crashed" in rec[bad].error_message
    assert rec[bad].attempts == 2
    assert sum(r.success for r in summary.records) == 2


def test_process_executor_kills_hung_episode_at_deadline(suite, tmp_path):
    """A step that hangs (for longer than the test may take) is ended by killing its worker at the
    episode's deadline: the record says the worker was killed. No wall-clock bound is asserted,
    so load cannot fail it. Mutation caught: the process executor not killing at the deadline
    (the step returns after its hang, and the record is the between-steps timeout)."""
    bad = first_ids(suite, 2)[1]
    factory = FaultyEnvFactory.create(tmp_path, "hang", bad, failures=1)
    s = spec(limit=3, executor="process", num_workers=2, episode_timeout_s=3.0)
    summary = Runner(s, suite, PLANNERS.build("oracle", suite="eb_alfred"), None, env_factory=factory).run()
    rec = {r.episode_id: r for r in summary.records}
    assert rec[bad].error_kind == "timeout" and "worker killed" in rec[bad].error_message, rec[bad].error_message
    assert sum(r.success for r in summary.records) == 2


def test_drive_stops_between_steps_once_the_deadline_passed(suite):
    """The local executor's per-episode deadline, at the unit level: ``drive`` runs a
    plan open-loop and stops after the step during which the deadline passed.
    Mutation caught: ``drive`` not checking the deadline."""
    from harness.run.executors import drive

    episode = suite.episodes(SPLIT)[0]
    plan_len = episode.metadata["expert_length"]
    assert plan_len >= 2

    def fresh():
        env = suite.make_env()
        obs, info = env.reset(seed=episode.seed, options={"episode": episode, "privileged": True})
        (plan,) = PLANNERS.build("oracle", suite="eb_alfred").act([AgentRequest(episode, obs, info)])
        return env, plan

    env, plan = fresh()
    tr = drive(env, plan, deadline=time.monotonic() - 1.0)  # already past
    assert tr.error is not None and tr.error[0] == "timeout" and tr.steps == 1 and not tr.done
    env, plan = fresh()
    tr = drive(env, plan, deadline=None)
    assert tr.error is None and tr.done and tr.steps == plan_len


class FakeClock:
    """The runner's (with its calls, episodes and records) and the local executor's clock,
    injected (they read ``time.monotonic`` through their module's ``time``): it stands still except when a test moves it, so a deadline passes
    exactly where the test says, whatever the machine's load. Every other ``time`` function is
    the real one."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def __getattr__(self, name):
        return getattr(time, name)


@pytest.fixture
def fake_clock(monkeypatch) -> FakeClock:
    import harness.run.calls
    import harness.run.episodes
    import harness.run.executors
    import harness.run.records
    import harness.run.runner

    clock = FakeClock()
    for module in (harness.run.runner, harness.run.calls, harness.run.episodes, harness.run.records):
        monkeypatch.setattr(module, "time", clock)
    monkeypatch.setattr(harness.run.executors, "time", clock)
    return clock


@dataclass
class ClockStepEnv:
    """Wraps a real env; every step moves the injected clock ``seconds`` forward."""

    inner: object
    clock: FakeClock
    seconds: float

    def reset(self, *, seed=None, options=None):
        return self.inner.reset(seed=seed, options=options)

    def step(self, action):
        self.clock.now += self.seconds
        return self.inner.step(action)

    def close(self):
        self.inner.close()


@pytest.mark.parametrize("pipeline", [False, True])
def test_local_executor_ends_an_episode_at_its_deadline(suite, fake_clock, pipeline):
    """An episode past its wall-clock limit becomes a ``timeout`` record after the step
    during which the limit passed (each step takes longer than the limit, on the injected
    clock), not after its whole plan; before its first step no time has passed, so no load
    can end it earlier. Mutation caught: the local executor ignoring the deadline (the runner
    would notice only after the whole plan ran: success, or steps > 1)."""
    summary = Runner(spec(limit=3, episode_timeout_s=600.0, pipeline=pipeline), suite,
                     PLANNERS.build("oracle", suite="eb_alfred"), None,
                     env_factory=lambda: ClockStepEnv(suite.make_env(), fake_clock, 3600.0)).run()
    assert len(summary.records) == 3 and summary.errors == 3
    for r in summary.records:
        assert r.error_kind == "timeout" and "wall-clock limit" in r.error_message
        assert r.steps == 1 < r.expert_length and not r.success
        assert r.wall_time_s >= 3600.0  # on the injected clock


@dataclass
class SeedRecordingEnv:
    """Wraps a real env; records the seed and episode seed of every reset."""

    inner: object
    log: list

    def reset(self, *, seed=None, options=None):
        self.log.append((options["episode"].episode_id, seed, options["episode"].seed))
        return self.inner.reset(seed=seed, options=options)

    def step(self, action):
        return self.inner.step(action)

    def close(self):
        self.inner.close()


def test_run_seed_offsets_every_episode_seed(suite, tmp_path):
    """``RunSpec.seed`` is added to every episode's seed: the env is reset with the
    shifted seed, records carry it, and episodes of another seed are new keys (never
    resumed from a run with seed 0). Mutation caught: ``select_episodes`` ignoring
    the run seed (or the executor resetting with the unshifted one)."""
    base = {e.episode_id: e.seed for e in suite.episodes(SPLIT)[:3]}
    log: list = []

    def factory():
        return SeedRecordingEnv(suite.make_env(), log)

    with ResultStore(tmp_path) as store:
        s0 = Runner(spec(limit=3), suite, PLANNERS.build("oracle", suite="eb_alfred"), store, env_factory=factory).run()
        s7 = Runner(spec(limit=3, seed=7), suite, PLANNERS.build("oracle", suite="eb_alfred"), store, env_factory=factory).run()
        again = Runner(spec(limit=3, seed=7), suite, PLANNERS.build("oracle", suite="eb_alfred"), store, env_factory=factory).run()
    assert {r.episode_id: r.seed for r in s0.records} == base
    assert {r.episode_id: r.seed for r in s7.records} == {k: v + 7 for k, v in base.items()}
    assert sorted(log) == sorted([(k, v, v) for k, v in base.items()] + [(k, v + 7, v + 7) for k, v in base.items()])
    assert (s7.skipped, s7.finished) == (0, 3) and (again.skipped, again.finished) == (3, 0)
    assert all(r.success for r in s7.records)


def test_process_and_local_executors_agree(suite):
    from harness.run.executors import SuiteEnvFactory

    local = Runner(spec(limit=6), suite, PLANNERS.build("random"), None).run()
    factory = SuiteEnvFactory("eb_alfred", {"render": False, "generated_per_split": 40})
    proc = Runner(spec(limit=6, executor="process", num_workers=2), suite, PLANNERS.build("random"), None,
                  env_factory=factory).run()

    def key(summary):
        return sorted((r.episode_id, r.success, r.steps, r.gc_satisfied, r.invalid_actions) for r in summary.records)

    assert key(local) == key(proc)
