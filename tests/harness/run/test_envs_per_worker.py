"""The process executor with several envs per worker (executor.envs_per_worker),
on the real EB-ALFRED suite: same records as the local executor, every slot in
flight at once served by one batched agent call, a faulty env dropped without
taking its worker's other envs down, and a hung env's worker killed at the
deadline with its in-flight episodes retried."""

from __future__ import annotations

import pytest

from harness.registry.catalog import PLANNERS
from harness.run.executors import ProcessExecutor, SuiteEnvFactory
from harness.run.runner import Runner
from harness.store import ResultStore
from harness.types import RunSpec
from tests.harness.run.test_runner import CountingAgent, FaultyEnvFactory, first_ids

SPLIT = "seen"
PARAMS = {"render": False, "generated_per_split": 40}


@pytest.fixture(scope="module")
def suite():
    from envs.eb_alfred.suite import EBAlfredSuite

    return EBAlfredSuite(**PARAMS)


def spec(**kw) -> RunSpec:
    base = dict(suite="eb_alfred", split=SPLIT, agent="oracle", variant="oracle", limit=8, batch_size=4)
    base.update(kw)
    return RunSpec(**base)


def _outcomes(records):
    return sorted((r.episode_id, r.success, r.steps, r.gc_satisfied, r.termination) for r in records)


def test_two_workers_with_three_envs_each_match_the_local_executor(suite, tmp_path):
    local = Runner(spec(), suite, PLANNERS.build("oracle", suite="eb_alfred"), None).run()
    agent = CountingAgent(PLANNERS.build("oracle", suite="eb_alfred"))
    s = spec(executor="process", num_workers=2, envs_per_worker=3, pipeline=False)
    with ResultStore(tmp_path) as store:
        summary = Runner(s, suite, agent, store, env_factory=SuiteEnvFactory("eb_alfred", PARAMS)).run()
        records = store.records()
    assert summary.errors == 0 and len(records) == 8
    assert _outcomes(records) == _outcomes(local.records)
    assert max(agent.batches) == 6  # lockstep: 2 workers x 3 envs in flight, one agent call


def test_capacity_and_default():
    assert ProcessExecutor(SuiteEnvFactory("eb_alfred", PARAMS), workers=3).capacity == 3
    assert ProcessExecutor(SuiteEnvFactory("eb_alfred", PARAMS), workers=3, envs_per_worker=4).capacity == 12


def test_simulator_fault_drops_one_env_and_is_retried(suite, tmp_path):
    bad = first_ids(suite, 3)[1]
    factory = FaultyEnvFactory.create(tmp_path, "raise", bad, failures=1)
    s = spec(limit=5, executor="process", num_workers=1, envs_per_worker=3)
    with ResultStore(tmp_path) as store:
        summary = Runner(s, suite, PLANNERS.build("oracle", suite="eb_alfred"), store, env_factory=factory).run()
        records = {r.episode_id: r for r in store.records()}
    assert summary.errors == 0 and len(records) == 5 and all(r.success for r in records.values())
    assert records[bad].attempts == 2 and all(r.attempts == 1 for k, r in records.items() if k != bad)


def test_hung_env_kills_its_worker_at_the_deadline(suite, tmp_path):
    bad = first_ids(suite, 2)[0]
    factory = FaultyEnvFactory.create(tmp_path, "hang", bad, failures=5)
    s = spec(limit=4, executor="process", num_workers=1, envs_per_worker=2, episode_timeout_s=3.0)
    summary = Runner(s, suite, PLANNERS.build("oracle", suite="eb_alfred"), None, env_factory=factory).run()
    records = {r.episode_id: r for r in summary.records}  # the last attempt of each episode
    assert len(records) == 4 and summary.finished == 4
    assert records[bad].error_kind == "timeout"
    # the worker's other env was lost with it: a worker fault, retried, then solved
    assert all(r.success and r.error_kind is None for k, r in records.items() if k != bad)
