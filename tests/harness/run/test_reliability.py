"""Reliability and security: one reproduction per defect, written to
fail before its fix. Real SQLite files, the real EB-ALFRED suite (household
backend) and real subprocesses wherever the defect involves them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.registry.catalog import PLANNERS
from harness.interfaces import AgentReply
from harness.run.calls import AgentCaller
from harness.run.runner import Runner
from harness.store import ResultStore
from harness.types import EpisodeRecord, RunSpec

REPO = Path(__file__).resolve().parents[3]
FAST = ["suite.params.render=false", "suite.params.generated_per_split=40", "progress=false"]


@pytest.fixture(scope="module")
def suite():
    from envs.eb_alfred.suite import EBAlfredSuite

    return EBAlfredSuite(render=False, generated_per_split=40)


def spec(**kw) -> RunSpec:
    base = dict(suite="eb_alfred", split="seen", agent="oracle", variant="v", limit=4, batch_size=2)
    base.update(kw)
    return RunSpec(**base)


def harness(*args: str, cwd: Path, timeout: float = 120, env_extra: dict | None = None,
            module: str = "harness.cli") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def one_line_error(res: subprocess.CompletedProcess, *needles: str) -> str:
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("harness: error: "), res.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


class Wrapped:
    """A real planner (the oracle) wrapped to misbehave in one chosen way."""

    def __init__(self, inner, act=None):
        self.inner, self._act = inner, act
        self.name, self.privileged = inner.name, inner.privileged

    def identity(self):
        return self.inner.identity()

    def reset(self, episode):
        self.inner.reset(episode)

    def act(self, requests):
        return self._act(self.inner, requests) if self._act else self.inner.act(requests)


# --- 1. a lone surrogate in stored text -----------------------------------------------------------
LONE = "plan \ud800 and \udfff end"


def test_lone_surrogates_are_stored_losslessly_and_never_sink_a_commit(tmp_path, suite):
    """Repro: an OpenAI-compatible server replying with "\\ud800" crashed the run with
    UnicodeEncodeError in RecordWriter.flush, rolling back every record of the group."""
    def act(inner, requests):
        return [AgentReply(actions=list(p), raw_output=LONE, prompt=LONE) for p in inner.act(requests)]

    agent = Wrapped(PLANNERS.build("oracle", suite="eb_alfred"), act)
    with ResultStore(tmp_path) as store:
        summary = Runner(spec(record_prompts=True), suite, agent, store).run()
    assert summary.finished == 4
    with ResultStore(tmp_path, readonly=True) as store:
        assert len(store.records()) == 4
        rows = store.transcripts()
    assert rows and all(r["raw_output"] == "plan \\ud800 and \\udfff end" for r in rows)
    assert all(r["prompt"] == "plan \\ud800 and \\udfff end" for r in rows)


def test_a_surrogate_in_an_error_message_or_extra_is_stored(tmp_path):
    with ResultStore(tmp_path) as store:
        store.begin_run("r", RunSpec(suite="s", split="a", agent=LONE, variant="v"), {"x": LONE}, {"y": LONE})
        written = store.add_many([
            EpisodeRecord("r", "v", "s", "a", "e\udc80", 0, error_kind="agent", error_message=LONE,
                          extra={"history": [[LONE, LONE]]}),
            EpisodeRecord("r", "v", "s", "a", "ok", 0, success=True),
        ])
        assert written == 2
        recs = {r.episode_id: r for r in store.records()}
    assert recs["e\\udc80"].error_message == "plan \\ud800 and \\udfff end"
    assert recs["e\\udc80"].extra == {"history": [[LONE, LONE]]}  # JSON escapes: lossless
    assert recs["ok"].success


# --- 3. secrets never reach the store, the report or the logs ------------------------------------
def test_url_credentials_reach_neither_store_nor_report_nor_logs(tmp_path):
    """Repro: ``base_url=http://user:pw@host/v1`` was written to runs.spec and sessions.provenance."""
    pytest.importorskip("openai", reason="the models extra (the openai backend's client) is not installed")
    secret = "S3CRETPW"
    run = harness("run", "planner=vlm", "planner.params.backend=openai", "planner.params.model=m",
                  f"planner.params.base_url=http://alice:{secret}@127.0.0.1:9/v1", "planner.params.max_retries=0",
                  "split=seen", "limit=2", *FAST, "out=o", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    report = harness("report", "o", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    for proc in (run, report):
        assert secret not in proc.stdout + proc.stderr
    files = [p for p in (tmp_path / "o").rglob("*") if p.is_file()]
    assert any(p.name == "results.sqlite" for p in files) and any(p.suffix == ".html" for p in files)
    for path in files:
        assert secret.encode() not in path.read_bytes(), path
    with ResultStore(tmp_path / "o", readonly=True) as store:
        (prov,) = store.provenance(store.runs()["run_id"][0])
    assert prov["config"]["planner"]["params"]["base_url"] == "http://***@127.0.0.1:9/v1"


def test_secret_named_keys_are_redacted_before_storing(tmp_path):
    """``+policy.params.api_key=...`` / tokens / passwords in the spec, identity and provenance."""
    from harness.util.redact import redact_override

    spec_ = RunSpec(suite="s", split="a", agent="remote", variant="v",
                    agent_params={"api_key": "sk-LIVE1", "api_key_env": "OPENAI_API_KEY", "max_new_tokens": 7,
                                  "url": "ws://bob:hunter2@10.0.0.1:8000?token=T0KEN&x=1"})
    with ResultStore(tmp_path) as store:
        store.begin_run("r", spec_, {"agent_identity": {"hf_token": "hf_LIVE2"}},
                        {"config": {"policy": {"params": {"Password": "pw-LIVE3", "auth": {"k": 1}}}}})
        store.add(EpisodeRecord("r", "v", "s", "a", "e", 0, error_kind="agent",
                                error_message="ConnectError: http://bob:hunter2@10.0.0.1/v1 refused"))
    blob = (tmp_path / "results.sqlite").read_bytes()
    for secret in (b"sk-LIVE1", b"hunter2", b"T0KEN", b"hf_LIVE2", b"pw-LIVE3"):
        assert secret not in blob, secret
    assert b"OPENAI_API_KEY" in blob and b'"max_new_tokens": 7' in blob  # not secrets: kept
    assert redact_override("+policy.params.api_key=sk-LIVE1") == "+policy.params.api_key=***"


# --- 4. a hung agent call ends at the earliest deadline ---------------------------------------------
class Hang:
    """act() blocks until released (a hung model server)."""

    def __init__(self):
        self.release = threading.Event()

    def __call__(self, inner, requests):
        self.release.wait(180)
        return inner.act(requests)


def _run_bounded(runner: Runner, limit_s: float):
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("summary", runner.run()), daemon=True)
    t0 = time.monotonic()
    t.start()
    t.join(limit_s)
    return box.get("summary"), time.monotonic() - t0


def test_episode_timeout_alone_interrupts_a_hung_planner(tmp_path, suite):
    """Repro: with only episode_timeout_s set, the deadline was checked after env steps only,
    so a planner that never answered hung the run forever."""
    hang = Hang()
    agent = Wrapped(PLANNERS.build("oracle", suite="eb_alfred"), hang)
    with ResultStore(tmp_path) as store:
        runner = Runner(spec(limit=3, batch_size=2, episode_timeout_s=0.5), suite, agent, store)
        summary, took = _run_bounded(runner, 120)  # the hung call is released only after this
        hang.release.set()
    assert summary is not None, f"the run hung ({took:.0f} s)"
    with ResultStore(tmp_path, readonly=True) as store:
        recs = store.records()
    assert len(recs) == 3 and all(r.error_kind == "timeout" for r in recs)
    assert all("wall-clock limit" in r.error_message and r.agent_calls == 1 for r in recs), [(r.error_message, r.agent_calls) for r in recs]


def test_a_call_abandoned_at_one_deadline_asks_again_for_the_others(tmp_path, suite, monkeypatch):
    """The earliest deadline ends the call; an episode whose own deadline is later is asked
    again (and finishes) rather than charged with a timeout it did not have."""
    calls = []

    def act(inner, requests):
        calls.append([r.episode.episode_id for r in requests])
        if len(calls) == 1:
            time.sleep(2)  # hangs past the first episode's deadline only
        return inner.act(requests)

    agent = Wrapped(PLANNERS.build("oracle", suite="eb_alfred"), act)
    runner = Runner(spec(limit=2, batch_size=2, episode_timeout_s=30), suite, agent, None)
    real = AgentCaller._call_limit
    monkeypatch.setattr(AgentCaller, "_call_limit",
                        lambda self, lives: (0.3, True) if len(calls) == 0 else real(self, lives))
    # the first episode's deadline is now; the second's in 30 s
    summary, _ = _run_bounded(runner, 30)
    assert summary is not None and summary.finished == 2


@pytest.mark.slow
@pytest.mark.ci
def test_agent_timeout_never_aborts_the_process(tmp_path):
    """Repro: after an agent timeout with the in-process model the abandoned thread
    was still inside torch at exit: "terminate called without an active exception", status 134.
    Both an agent that honours the cancellation (as the hf backend's stopping criterion does)
    and one that never does end with status 0 and every record saved."""
    pytest.importorskip("torch", reason="the models extra (torch) is not installed")
    for mode in (["cancellable"], []):
        res = harness("2", *mode, "run", "planner=random", "split=seen", "limit=3", *FAST,
                      "agent_timeout_s=0.5", "executor.batch_size=2", f"out=o{len(mode)}", cwd=tmp_path, module="tests.harness.spin_cli")
        assert res.returncode == 0, (mode, res.returncode, res.stderr[-2000:])
        assert "terminate called" not in res.stderr
        with ResultStore(tmp_path / f"o{len(mode)}", readonly=True) as store:
            recs = store.records()
        assert len(recs) == 3 and sum(r.error_kind == "timeout" for r in recs) == 1


# --- 8. SystemExit inside an agent --------------------------------------------------------------------
@pytest.mark.parametrize("where", ["act", "reset"])
@pytest.mark.parametrize("timeout", [None, 30.0])
def test_system_exit_in_an_agent_is_an_agent_error(tmp_path, suite, where, timeout):
    """Repro: an agent raising SystemExit ended the run silently with its exit code."""
    class Exiting(Wrapped):
        def reset(self, episode):
            if where == "reset" and episode.episode_id.endswith("1"):
                sys.exit(3)
            self.inner.reset(episode)

    def act(inner, requests):
        if where == "act" and any(r.episode.episode_id.endswith("1") for r in requests):
            raise SystemExit(3)
        return inner.act(requests)

    agent = Exiting(PLANNERS.build("oracle", suite="eb_alfred"), act)
    with ResultStore(tmp_path) as store:
        summary = Runner(spec(limit=3, batch_size=3, agent_timeout_s=timeout), suite, agent, store).run()
        recs = {r.episode_id: r for r in store.records()}
    assert summary.finished == 3 and len(recs) == 3
    bad = next(r for k, r in recs.items() if k.endswith("1"))
    assert bad.error_kind == "agent" and "sys.exit(3)" in bad.error_message
    assert sum(r.success for r in recs.values()) == 2


@pytest.mark.slow
def test_hf_generate_stops_once_its_call_is_abandoned(tmp_path):
    """The hf backend's stopping criterion: a generate call abandoned by the runner's timeout
    returns at its next token instead of generating max_new_tokens."""
    pytest.importorskip("peft")
    from harness.run.calls import AgentTimeout, _call_with_timeout, wait_for_abandoned
    from planners.vlm.backends import HFBackend
    from tests.planners.tiny_vlm import build_base

    ckpt = build_base(tmp_path / "base")
    backend = HFBackend(str(ckpt), max_new_tokens=150)
    conv = [[{"role": "user", "content": [{"type": "text", "text": "pick up the apple"}]}]]
    steps = []
    # Removed at the end: the process keeps the loaded model for later backends of the same checkpoint.
    hook = backend.model.register_forward_pre_hook(lambda *_: steps.append(time.monotonic()))
    try:
        backend.generate(conv)  # warm-up
        full = len(steps)
        steps.clear()
        with pytest.raises(AgentTimeout):
            _call_with_timeout(lambda: (time.sleep(0.3), backend.generate(conv)), 0.01)
        assert wait_for_abandoned(30)
        assert len(steps) <= 2 < full, (len(steps), full)
    finally:
        hook.remove()


# --- config precedence ------------------------------------------------------------------------------
def test_command_line_agent_params_win_over_the_variants_own(monkeypatch):
    """Repro: ``variant=base planner.params.backend=openai planner.params.model=m`` ran the hf backend
    on $BASE_MODEL: the variant's params were merged last and silently replaced what was given."""
    from harness.run.config import ConfigError, compose
    from harness.run.spec import to_run_spec

    monkeypatch.setenv("BASE_MODEL", "/ckpt/base")
    spec_ = to_run_spec(compose(["variant=base", "planner.params.backend=openai", "planner.params.model=served",
                                 "planner.params.base_url=http://127.0.0.1:8000/v1"]))
    assert (spec_.agent_params["backend"], spec_.agent_params["model"]) == ("openai", "served")
    # The variant's values still apply where the command line says nothing.
    assert to_run_spec(compose(["variant=base"])).agent_params["model"] == "/ckpt/base"
    with pytest.raises(ConfigError, match="disagree"):
        compose(["variant=base", "planner.params.model=a", "variant.params.model=b"])


def test_served_checkpoint_is_per_variant(monkeypatch, tmp_path):
    """``served_checkpoint`` given once in a sweep of variants would be hashed into every
    variant's identity: refused; each variant reads its own $<VARIANT>_SERVED_CHECKPOINT."""
    from harness.cli.entry import main
    from harness.run.config import compose
    from harness.run.spec import to_run_spec

    monkeypatch.setenv("BASE_MODEL", "/ckpt/base")
    monkeypatch.setenv("FAVOR_SFT_SERVED_CHECKPOINT", "/ckpt/favor")
    monkeypatch.delenv("BASE_SERVED_CHECKPOINT", raising=False)
    served = ["planner.params.backend=openai", "planner.params.base_url=http://127.0.0.1:9/v1"]  # where it applies
    params = {v: to_run_spec(compose([f"variant={v}", *served])).agent_params for v in ("base", "favor_sft")}
    assert params["base"].get("served_checkpoint") is None  # unset: not passed at all
    assert params["favor_sft"]["served_checkpoint"] == "/ckpt/favor"
    assert main(["run", "-m", "variant=base,favor_sft", "planner.params.served_checkpoint=/ckpt/x",
                 f"out={tmp_path}/o"]) == 2
    assert not (tmp_path / "o").exists()


# --- variant=base without $BASE_MODEL -----------------------------------------------------------------
def test_variant_without_its_checkpoint_names_the_variable(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_MODEL", "_ADAPTER"))}
    res = subprocess.run([sys.executable, "-m", "harness.cli", "run", "variant=favor_sft", "split=seen", "limit=1",
                          *FAST, "out=o"], cwd=tmp_path, env={**env, "PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, timeout=120)
    one_line_error(res, "set $FAVOR_SFT_MODEL to its folder (or Hub id), or $BASE_MODEL with $FAVOR_SFT_ADAPTER",
                   "variant.params.model=PATH")
    res = harness("run", "variant=base", "split=seen", "limit=1", *FAST, "out=o", cwd=tmp_path,
                  env_extra={"BASE_MODEL": ""})
    one_line_error(res, "$BASE_MODEL")


# --- 5. a worker killed between two steps ----------------------------------------------------------------
def _kill_workers_once(state):
    def act(inner, requests):
        state["calls"] += 1
        if state["calls"] == 1:  # after the reset, before the first step: every worker dies
            import multiprocessing
            import signal as _signal

            for child in multiprocessing.active_children():
                if child.name.startswith("harness-worker-"):
                    os.kill(child.pid, _signal.SIGKILL)
                    child.join(5)
        return inner.act(requests)
    return act


@pytest.mark.parametrize("retries", [0, 1])
def test_a_killed_worker_is_recorded_as_such_and_the_episode_retried_from_reset(suite, retries):
    """Repro: the pending step went to a respawned worker whose env was never reset; the record
    said ``call reset() before step()`` and the real cause was lost."""
    from harness.run.executors import SuiteEnvFactory

    state = {"calls": 0}
    agent = Wrapped(PLANNERS.build("oracle", suite="eb_alfred"), _kill_workers_once(state))
    factory = SuiteEnvFactory("eb_alfred", {"render": False, "generated_per_split": 40})
    summary = Runner(spec(limit=1, executor="process", num_workers=1, max_retries=retries), suite, agent, None,
                     env_factory=factory).run()
    (rec,) = summary.records
    if retries:
        assert rec.error_kind is None and rec.success and rec.attempts == 2
    else:
        assert rec.error_kind == "worker" and "killed by SIGKILL" in rec.error_message
        assert "reset()" not in rec.error_message


# --- 6, 7. damaged stores, a full disk -----------------------------------------------------------------
def _store_with(path: Path, n: int) -> None:
    with ResultStore(path) as store:
        store.begin_run("r1", RunSpec(suite="eb_alfred", split="seen", agent="x", variant="v"), {}, {})
        store.add_many([(EpisodeRecord("r1", "v", "eb_alfred", "seen", f"seen/{i:04d}", i, success=i % 3 == 0,
                                       error_message="x" * 300),
                         [{"call": 0, "raw_output": "y" * 200}]) for i in range(n)])


def _corrupt(file: Path, how: str) -> None:
    data = bytearray(file.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    if how == "page":  # garbage over a page in the middle (a table's b-tree page)
        start = (len(data) // page // 2) * page
        data[start:start + page] = bytes((i * 37 + 11) % 256 for i in range(page))
    elif how == "interior":  # the first bytes of every page after the schema: b-tree headers
        for start in range(2 * page, len(data), page):
            data[start:start + 8] = b"\x0d\xff\xff\xff\xff\xff\xff\xff"
    elif how == "truncated":
        data = data[: len(data) // 2]
    file.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["page", "interior", "truncated"])
def test_a_damaged_store_is_refused_in_one_line(tmp_path, how):
    """Repro: on a damaged store `harness run` said everything was "resumed" (exit 0) while
    `harness table` failed, or either printed a traceback, or advised freeing disk space."""
    _store_with(tmp_path / "o", 400)
    _corrupt(tmp_path / "o" / "results.sqlite", how)
    for args in (["run", "split=seen", "limit=3", *FAST, "out=o"], ["table", "o"], ["report", "o"]):
        line = one_line_error(harness(*args, cwd=tmp_path), "damaged", "harness store repair")
        assert "free disk space" not in line
    res = harness("store", "check", "o", cwd=tmp_path)
    assert res.returncode == 1 and "damaged" in res.stderr and "Traceback" not in res.stderr
    res = harness("store", "repair", "o", cwd=tmp_path)  # salvages what SQLite can still read
    assert res.returncode in (0, 2) and len(res.stderr.splitlines()) == 1, res.stderr


def test_repair_salvages_every_readable_record(tmp_path):
    _store_with(tmp_path / "o", 400)
    _corrupt(tmp_path / "o" / "results.sqlite", "page")
    assert harness("store", "check", "o", cwd=tmp_path).returncode == 1
    res = harness("store", "repair", "o", cwd=tmp_path)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    assert harness("store", "check", "o-repaired", cwd=tmp_path).returncode == 0
    with ResultStore(tmp_path / "o-repaired", readonly=True) as store:
        recs = store.records()
        assert len(recs) > 300 and all(r.error_message == "x" * 300 for r in recs)
    assert harness("table", "o-repaired", cwd=tmp_path).returncode == 0
    assert harness("store", "repair", "o", cwd=tmp_path).returncode == 2  # never overwrites a store


def test_a_sound_store_checks_clean(tmp_path):
    _store_with(tmp_path / "o", 5)
    res = harness("store", "check", "o", cwd=tmp_path)
    assert res.returncode == 0 and "sound" in res.stderr


def test_a_full_disk_leaves_no_empty_store(tmp_path):
    """Repro: on a full disk a 0-byte results.sqlite was left behind."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = " ".join(f"'{a}'" for a in [sys.executable, "-m", "harness.cli", "run", "planner=random", "split=seen",
                                      "limit=5", *FAST, "out=y"])
    res = subprocess.run(["bash", "-c", f"ulimit -f 0; exec {cmd}"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    one_line_error(res, "result store")
    assert not (tmp_path / "y" / "results.sqlite").exists()
    assert not (tmp_path / "y").exists()  # nor an empty output folder


# --- 17. serve-policy: frame limit, no tracebacks to clients, bounded connections ------------------------
def test_policy_server_limits_frames_connections_and_sends_no_traceback():
    """Repro: ``max_size=None`` (one 200 MB frame took the server from 43 to 454 MB), the openpi
    error path sent the Python traceback to the client, connections were unbounded."""
    from websockets.exceptions import ConnectionClosed, InvalidStatus
    from websockets.sync.client import connect

    from policies import wire
    from policies.remote import RemotePolicy
    from policies.server import PolicyServer, PolicyService
    from tests.policies.conftest import ScriptedPolicy, libero_obs, request

    srv = PolicyServer(PolicyService(ScriptedPolicy()), port=0, max_connections=2,
                       max_frame=1 << 20).start_background()
    url = f"ws://127.0.0.1:{srv.port}"
    try:
        # A policy error: one line naming it, no traceback, then close.
        client = RemotePolicy(url=url, backoff_s=0.05, connect_retries=2)
        with pytest.raises(RuntimeError) as err:
            client.act([request(libero_obs(5, instruction="explode"))])
        assert "scripted failure" in str(err.value) and "Traceback" not in str(err.value)
        assert 'File "' not in str(err.value)
        client.close()
        with connect(url, max_size=None) as ws:
            ws.recv()  # metadata
            ws.send(wire.packb({"observation/image": 1}))  # malformed: KeyError inside the server
            text = ws.recv()
            assert isinstance(text, str) and "Traceback" not in text and "File " not in text, text
        # A frame over the limit closes that connection (1009), the server stays up.
        with connect(url, max_size=None) as ws:
            ws.recv()
            ws.send(b"\0" * (2 << 20))
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
        # At most max_connections at once; the next one is refused at the handshake.
        with connect(url) as a, connect(url) as b:
            a.recv(), b.recv()
            with pytest.raises(InvalidStatus) as refused:
                with connect(url, open_timeout=5):
                    pass
            assert refused.value.response.status_code == 503
        time.sleep(0.3)
        with connect(url) as c:  # room again once they closed
            assert c.recv()
    finally:
        srv.stop()


@pytest.mark.parametrize("port", ["abc", "99999", "-1"])
def test_serve_policy_bad_port_is_one_line(tmp_path, port):
    one_line_error(harness("serve-policy", "policy=zero", f"port={port}", cwd=tmp_path), "port must be")


# --- 9-12. bad input: one line, exit 2 ------------------------------------------------------------------
@pytest.mark.parametrize("args, needle", [
    (["seed=99999999999999999999999"], "seed must be between"),
    (["seed=-1"], "seed must be between"),
    (["executor.batch_size=10000000000"], "executor.batch_size must be between"),
    (["executor=process", "episode_timeout_s=inf"], "episode_timeout_s must be > 0"),
    (["agent_timeout_s=inf"], "agent_timeout_s must be > 0"),
    (["agent_timeout_s=1e300"], "agent_timeout_s must be > 0"),
    (["episode_timeout_s=nan"], "episode_timeout_s must be > 0"),
    (["out="], "out must name an output directory"),
    (["record_prompts=2"], "record_prompts must be true or false"),
    (["progress=yes"], "progress must be true or false"),
    pytest.param(["planner=vlm", "planner.params.model=/nonexistent"], "cannot build planner vlm",
                 marks=pytest.mark.slow),  # imports transformers (~25 s here)
    (["planner=vlm", "planner.params.model=m", "planner.params.max_new_tokens=-1"], "max_new_tokens must be"),
    (["planner=vlm", "planner.params.model=m", "planner.params.image_size=-1"], "image_size must be"),
    (["out=runs/#1"], "'#' must be quoted"),
    pytest.param(["suite=libero", "split=libero_spatial", "suite.params.tasks=[99]", "policy=zero"],
                 "bad parameters for suite libero: IndexError", marks=pytest.mark.slow),
    pytest.param(["suite=libero", "split=libero_spatial", "suite.params.trials=0", "policy=zero"],
                 "trials must be a whole number >= 1", marks=pytest.mark.slow),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, needle):
    """Repro: each gave a traceback or ran silently."""
    if "planner=vlm" in args:  # without the extra, the missing `models` extra is named first (one line too)
        from tests.helpers import require_extras

        require_extras("models")
    base = ["limit=1", "progress=false"] if "suite=libero" in args else ["split=seen", "limit=1", *FAST]
    res = harness("run", *base, *(["out=o"] if not any(a.startswith("out=") for a in args) else []), *args,
                  cwd=tmp_path)
    one_line_error(res, needle)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args", [["run", "--bogus"], ["table"], ["nosuchcommand"], ["store", "fix", "o"]])
def test_argparse_errors_are_one_line(tmp_path, args):
    """Repro: argparse printed its usage before the error (two lines and more)."""
    one_line_error(harness(*args, cwd=tmp_path))


def test_table_error_is_not_preceded_by_notes(tmp_path):
    """Repro: `harness table` printed a note, then failed: the error was not one line."""
    _store_with(tmp_path / "o", 3)  # no 'base' variant: the table notes it (after the table)
    one_line_error(harness("table", "o", "--metrics", "bogus", cwd=tmp_path))


# --- progress without a terminal --------------------------------------------------------------------------
def test_progress_lines_without_a_terminal_at_a_bounded_rate():
    """Repro: with stderr not a TTY nothing was printed until the end (a run looked hung for
    12 minutes). Now: a line every interval even while nothing finishes, one per finished
    batch at most every min_gap, each with done/total, SR so far and ETA."""
    import io

    from harness.cli.run_progress import Progress

    out = io.StringIO()
    bar = Progress("base · eb_alfred/seen", enabled=True, batch=2, interval_s=0.3, min_gap_s=0.0, stream=out)

    class R:
        def __init__(self, ok):
            self.success, self.error_kind = ok, None

    with bar:
        bar.start(10, 4)
        time.sleep(0.75)  # nothing finishes: the heartbeat still prints (2 lines)
        beats = out.getvalue().splitlines()
        assert len(beats) == 2 and all("4/10" in l and "ETA ?" in l for l in beats), beats
        for ok in (True, False, True):
            bar.update(R(ok))
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and "6/10 (60%)" in lines[-1] and "SR 50.0% of 2 run" in lines[-1], lines
    assert "ETA " in lines[-1] and "ETA ?" not in lines[-1]
    # Bounded: 1,000 records within min_gap print nothing more.
    bar = Progress("x", enabled=True, batch=1, interval_s=60, min_gap_s=60, stream=out)
    before = len(out.getvalue().splitlines())
    with bar:
        bar.start(1000, 0)
        for _ in range(1000):
            bar.update(R(True))
    assert len(out.getvalue().splitlines()) == before


# --- a fully resumed run prints the stored result ------------------------------------------------------------
def test_a_fully_resumed_run_prints_the_stored_result(tmp_path):
    """Repro: rerunning a finished run printed "0/0 succeeded"."""
    first = harness("run", "split=seen", "limit=3", *FAST, "out=o", cwd=tmp_path)
    again = harness("run", "split=seen", "limit=3", *FAST, "out=o", cwd=tmp_path)
    assert first.returncode == again.returncode == 0
    assert "3/3 succeeded" in first.stderr
    assert "0 episodes run, 3 resumed; 3/3 succeeded" in again.stderr, again.stderr


# --- 19. memory at scale --------------------------------------------------------------------------------------
def test_big_runs_keep_counters_not_records_and_resume_skips_by_id_without_building(tmp_path, monkeypatch):
    """Repro: RunSummary kept every record (~4 KB each); a resumed generated split rebuilt every
    episode before the first one ran."""
    import harness.run.runner as runner_mod
    from envs.eb_alfred import generator
    from envs.eb_alfred.suite import EBAlfredSuite

    monkeypatch.setattr(runner_mod, "KEEP_RECORDS_UP_TO", 5)
    suite_ = EBAlfredSuite(render=False, generated_per_split=12)
    agent = PLANNERS.build("random")
    with ResultStore(tmp_path) as store:
        s = spec(agent="random", limit=8)
        first = Runner(s, suite_, agent, store).run()
        assert first.records is None and first.finished == 8 and len(store.records()) == 8
        generator.generate_one.cache_clear()
        built = []
        real = generator.generate_one.__wrapped__

        def counting(split, index, seed=0):
            built.append(index)
            return real(split, index, seed)

        monkeypatch.setattr(generator, "generate_one", counting)
        suite2 = EBAlfredSuite(render=False, generated_per_split=12)
        again = Runner(spec(agent="random", limit=10), suite2, agent, store).run()
    assert again.skipped == 8 and again.finished == 2 and again.records == list(again.records or [])
    assert sorted(set(built)) == [8, 9]  # only the two episodes left were built
