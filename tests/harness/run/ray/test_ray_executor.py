"""executor=ray on a real local Ray cluster started here (num_cpus=2): same
records as ``local``, an actor killed mid-episode is retried then recorded, and
a killed driver's run resumes. Fault injection wraps the real EB-ALFRED env."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import committed_rows, wait_at_gate

ray = pytest.importorskip("ray", reason="executor=ray needs the ray extra: pip install -e '.[ray]'")

from harness.registry.catalog import PLANNERS  # noqa: E402
from harness.run.executors import SuiteEnvFactory  # noqa: E402
from harness.run.runner import Runner  # noqa: E402
from harness.store import ResultStore  # noqa: E402
from harness.types import RunSpec  # noqa: E402

REPO = Path(__file__).resolve().parents[4]
SUITE_PARAMS = {"render": False, "generated_per_split": 40}
# serial: a Ray cluster takes the machine's cores and memory; parallel test workers would starve it
pytestmark = [pytest.mark.slow, pytest.mark.ci, pytest.mark.serial]


@pytest.fixture(scope="module")
def suite():
    from envs.eb_alfred.suite import EBAlfredSuite

    return EBAlfredSuite(**SUITE_PARAMS)


def spec(**kw) -> RunSpec:
    base = dict(suite="eb_alfred", split="seen", agent="random", variant="random", limit=10, batch_size=4,
                suite_params=SUITE_PARAMS)
    base.update(kw)
    return RunSpec(**base)


def comparable(records):
    """Everything but timings (and the run id, equal by construction)."""
    out = []
    for r in sorted(records, key=lambda r: r.key):
        d = r.to_dict()
        d.pop("wall_time_s")
        out.append(d)
    return out


def test_ray_records_equal_local(cluster, suite, tmp_path):
    factory = SuiteEnvFactory("eb_alfred", SUITE_PARAMS)
    local = Runner(spec(), suite, PLANNERS.build("random"), None).run()
    with ResultStore(tmp_path / "ray") as store:
        on_ray = Runner(spec(executor="ray", num_workers=2), suite, PLANNERS.build("random"), store,
                        env_factory=factory).run()
        stored = store.records()
    assert on_ray.finished == 10 and on_ray.errors == 0
    assert comparable(local.records) == comparable(on_ray.records) == comparable(stored)
    oracle_local = Runner(spec(agent="oracle", limit=6), suite, PLANNERS.build("oracle", suite="eb_alfred"), None).run()
    oracle_ray = Runner(spec(agent="oracle", limit=6, executor="ray", num_workers=2), suite, PLANNERS.build("oracle", suite="eb_alfred"),
                        None, env_factory=factory).run()
    assert comparable(oracle_local.records) == comparable(oracle_ray.records)
    assert all(r.success for r in oracle_ray.records)


@dataclass
class KillingEnv:
    """The real env, except that stepping ``bad_episode`` SIGKILLs its own process
    (the Ray actor) while the counter file allows."""

    inner: object
    bad_episode: str
    counter: str

    def reset(self, *, seed=None, options=None):
        self._current = options["episode"].episode_id
        return self.inner.reset(seed=seed, options=options)

    def step(self, action):
        if self._current == self.bad_episode:
            left = int(Path(self.counter).read_text())
            if left > 0:
                Path(self.counter).write_text(str(left - 1))
                os.kill(os.getpid(), signal.SIGKILL)
        return self.inner.step(action)

    def close(self):
        self.inner.close()


@dataclass(frozen=True)
class KillingEnvFactory:
    bad_episode: str
    counter: str

    def __call__(self):
        return KillingEnv(SuiteEnvFactory("eb_alfred", SUITE_PARAMS)(), self.bad_episode, self.counter)


@pytest.mark.parametrize("kills, expect_error", [(1, False), (5, True)])
def test_actor_killed_mid_episode_is_retried_then_recorded(cluster, suite, tmp_path, kills, expect_error):
    bad = suite.episodes("seen")[2].episode_id
    counter = tmp_path / "kills"
    counter.write_text(str(kills))
    factory = KillingEnvFactory(bad, str(counter))
    # One env per actor here, so no other episode shares the killed actor (sharing is
    # covered by the timeout test below, where the culprit is not retried).
    summary = Runner(spec(agent="oracle", limit=6, executor="ray", num_workers=2, batch_size=2, max_retries=1),
                     suite, PLANNERS.build("oracle", suite="eb_alfred"), None, env_factory=factory).run()
    by_id = {r.episode_id: r for r in summary.records}
    assert len(by_id) == 6
    rec = by_id[bad]
    assert rec.attempts == 2  # killed once, then run again on a fresh actor
    if expect_error:
        assert rec.error_kind == "worker" and "Ray actor died" in rec.error_message and not rec.success
        assert int(counter.read_text()) == kills - 2
    else:
        assert rec.error_kind is None and rec.success
    # No episode lost; all others succeed.
    assert all(r.success and r.error_kind is None for k, r in by_id.items() if k != bad)


def _spawn(*args: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", *args], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_driver_killed_then_rerun_resumes(cluster, tmp_path):
    """The real CLI with executor=ray, held at a gate (tests/harness/gated_cli.py) and
    SIGKILLed mid-run; the rerun runs only the missing episodes and the table
    equals an uninterrupted local run's."""
    n, k, batch = 16, 8, 4
    args = ["planner=random", "split=seen", f"limit={n}", "suite.params.generated_per_split=40",
            "suite.params.render=false", "executor=ray", "executor.num_workers=2",
            f"executor.batch_size={batch}", "progress=false"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_ADDRESS": cluster}
    out, gate = tmp_path / "killed", tmp_path / "gate"
    gate.mkdir()
    db = out / "results.sqlite"

    proc = _spawn("tests.harness.gated_cli", str(gate), str(k), "run", *args, f"out={out}", env=env)
    try:
        wait_at_gate(proc, gate, db, rows=k - batch + 1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    at_kill = committed_rows(db)
    assert k - batch + 1 <= at_kill <= k

    proc = _spawn("harness.cli", "run", *args, f"out={out}", env=env)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    assert f"{n - at_kill} episodes run, {at_kill} resumed" in err

    clean = tmp_path / "clean"
    local_args = [a for a in args if not a.startswith("executor")]
    proc = _spawn("harness.cli", "run", *local_args, f"out={clean}", env=env)
    assert proc.communicate(timeout=600)[0] is not None and proc.returncode == 0
    with ResultStore(out, readonly=True) as a, ResultStore(clean, readonly=True) as b:
        assert comparable(a.records()) == comparable(b.records())


@dataclass
class HangingEnv(KillingEnv):
    """The real env, except that stepping ``bad_episode`` hangs (while the counter allows)."""

    def step(self, action):
        if self._current == self.bad_episode:
            left = int(Path(self.counter).read_text())
            if left > 0:
                Path(self.counter).write_text(str(left - 1))
                time.sleep(120)
        return self.inner.step(action)


@dataclass(frozen=True)
class HangingEnvFactory(KillingEnvFactory):
    def __call__(self):
        return HangingEnv(SuiteEnvFactory("eb_alfred", SUITE_PARAMS)(), self.bad_episode, self.counter)


def test_hung_step_past_the_deadline_kills_the_actor_and_is_a_timeout_record(cluster, suite, tmp_path):
    bad = suite.episodes("seen")[1].episode_id
    counter = tmp_path / "hangs"
    counter.write_text("1")
    t0 = time.monotonic()
    summary = Runner(spec(agent="oracle", limit=4, executor="ray", num_workers=2, episode_timeout_s=8), suite,
                     PLANNERS.build("oracle", suite="eb_alfred"), None, env_factory=HangingEnvFactory(bad, str(counter))).run()
    assert time.monotonic() - t0 < 100  # the 120 s hang was cut at the deadline
    by_id = {r.episode_id: r for r in summary.records}
    assert by_id[bad].error_kind == "timeout" and "Ray actor killed" in by_id[bad].error_message



@pytest.mark.parametrize("agent", ["random", "oracle"])
def test_agent_on_a_ray_actor_gives_the_same_records(cluster, suite, agent):
    """The planner on its own actor (as a model on a GPU actor would be), envs on
    env actors: same run id and records as everything local."""
    from harness.run.ray_actors import RayAgent

    remote = RayAgent(agent, suite="eb_alfred", num_cpus=0)  # planner=oracle: the suite's own
    try:
        local = Runner(spec(agent=agent, limit=6), suite, PLANNERS.build(agent, suite="eb_alfred"), None).run()
        on_ray = Runner(spec(agent=agent, limit=6, executor="ray", num_workers=1), suite, remote, None,
                        env_factory=SuiteEnvFactory("eb_alfred", SUITE_PARAMS)).run()
    finally:
        remote.close()
    assert local.run_id == on_ray.run_id
    assert comparable(local.records) == comparable(on_ray.records)


def test_agent_on_a_ray_actor_has_the_wrapped_agents_params(cluster, suite):
    """The run identity hashes ``agent.params``: a RayAgent carries the wrapped agent's
    parsed parameters, so its run id is the local one. Mutation guarded: a RayAgent
    without ``params`` hashes none and gets another run id."""
    from harness.registry.catalog import POLICIES
    from harness.run.ray_actors import RayAgent
    from harness.params import identity_of
    from harness.run.identity import run_id_of, run_identity

    values = {"action": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], "chunk": 3}
    remote = RayAgent("zero", values, kind="policy", num_cpus=0)
    try:
        local = POLICIES.build("zero", **values)
        assert remote.params == local.params and identity_of(remote.params)["action"] == values["action"]
        run = spec(agent="zero", agent_kind="policy")
        assert run_id_of(run_identity(run, suite, remote)) == run_id_of(run_identity(run, suite, local))
    finally:
        remote.close()


def test_agent_on_a_ray_actor_takes_its_declared_concurrent_calls(cluster, suite):
    """The ``vlm`` planner on the ``openai`` backend declares its ``max_concurrency`` as
    ``max_concurrent_calls``; on a Ray actor it must say so to the runner and take that many
    calls at once (a real server on 127.0.0.1 counts the requests in flight). Mutation
    guarded: an actor made without ``max_concurrency`` serves one call at a time."""
    pytest.importorskip("openai", reason="the openai backend needs the `models` extra")
    import json
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from harness.run.ray_actors import RayAgent
    from tests.helpers import chat_completion, eb_alfred_requests, send_json

    lock, inflight = threading.Lock(), [0, 0]  # now, most

    class Slow(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                inflight[0] += 1
                inflight[1] = max(inflight[1], inflight[0])
            time.sleep(0.5)
            with lock:
                inflight[0] -= 1
            send_json(self, chat_completion(body["model"], '{"executable_plan": []}'))

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    remote = RayAgent("vlm", {"backend": "openai", "model": "m", "base_url": url, "max_concurrency": 3,
                              "num_examples": 0, "image_size": 32, "max_retries": 0}, num_cpus=0, suite="eb_alfred")
    try:
        assert remote.max_concurrent_calls == 3
        requests = eb_alfred_requests(3)
        for r in requests:
            remote.reset(r.episode)
        with ThreadPoolExecutor(3) as pool:
            replies = list(pool.map(lambda r: remote.act([r]), requests))
    finally:
        remote.close()
        server.shutdown()
        server.server_close()
    assert len(replies) == 3 and inflight[1] == 3


def test_ray_records_equal_pipelined_and_lockstep(cluster, tmp_path):
    """The runner drives Ray's actors pipelined (start/submit_*) by default: the same
    records and transcripts as lockstep (tests/harness/run/test_pipeline.py's comparison)."""
    from tests.harness.run.test_pipeline import EB_ALFRED, Jittery, _compare

    _compare(tmp_path, "eb_alfred", EB_ALFRED, lambda: Jittery(PLANNERS.build("oracle_json", suite="eb_alfred")),
             split="seen", limit=6, batch_size=4, executors=("ray",))
