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
