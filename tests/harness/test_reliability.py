"""Issue 22 (reliability and security): one reproduction per defect, written to
fail before its fix. Real SQLite files, the real EB-ALFRED suite (household
backend) and real subprocesses wherever the defect involves them.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.catalog import PLANNERS
from harness.interfaces import AgentReply
from harness.runner import Runner
from harness.store import ResultStore, StoreError
from harness.types import EpisodeRecord, RunSpec

REPO = Path(__file__).resolve().parents[2]
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

    agent = Wrapped(PLANNERS.build("oracle"), act)
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
    from harness.redact import redact_override

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
