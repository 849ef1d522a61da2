"""The agent's failures are counted where people look: a run whose every reply is prose (no
plan parses) says so in its end line, beside the runtime errors, through the real CLI against
a loopback OpenAI-compatible server; the progress lines count them as episodes finish."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.cli.run_progress import Progress, failures_text
from harness.store import ResultStore
from harness.types import EpisodeRecord
from tests.helpers import serve_chat_reply

REPO = Path(__file__).resolve().parents[3]
PROSE = "I would first look around the kitchen, then think about where the apple might be."


def serve_prose() -> ThreadingHTTPServer:
    return serve_chat_reply(PROSE)


def test_a_run_whose_every_reply_is_prose_says_so_in_its_end_line(tmp_path):
    pytest.importorskip("openai", reason="the openai backend needs the `models` extra")
    httpd = serve_prose()
    try:
        res = subprocess.run(
            [sys.executable, "-m", "harness.cli", "run", "suite=eb_alfred", "suite.params.render=false",
             "suite.params.generated_per_split=40", "split=seen", "limit=2", "planner=vlm",
             "planner.params.backend=openai", "planner.params.model=m", "planner.params.max_retries=0",
             f"planner.params.base_url=http://127.0.0.1:{httpd.server_port}/v1", "out=o"],
            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300)
    finally:
        httpd.shutdown()
    assert res.returncode == 0, res.stderr
    (end,) = [line for line in res.stderr.splitlines() if "succeeded;" in line]
    assert "0/2 succeeded; 0 errors, 0 timeouts, 2 with output errors (" in end, end
    with ResultStore(tmp_path / "o", readonly=True) as store:
        (run_id,) = store.runs()["run_id"]
        failures = store.run_failures(run_id)
    assert failures["output_error_episodes"] == 2 and failures["output_errors"] >= 2, failures
    assert f"({failures['output_errors']} unusable replies)" in end, end
    print(end)


def _record(i: int, **kw) -> EpisodeRecord:
    return EpisodeRecord(run_id="r", variant="v", suite="s", split="x", episode_id=str(i), seed=0, **kw)


def test_store_and_progress_count_each_kind(tmp_path):
    records = [
        _record(0, success=True),
        _record(1, error_kind="agent", error_message="boom"),
        _record(2, error_kind="timeout", error_message="slow"),
        _record(3, planner_output_errors=3),
        _record(4, planner_output_errors=1, extra={"fallback_plans": 1}),
        _record(5, empty_plan=True, termination="empty_plan"),
        _record(6, success=True, empty_plan=True, termination="empty_plan"),  # a stop: no failure
    ]
    expected = {"errors": 1, "timeouts": 1, "output_error_episodes": 2, "output_errors": 4, "empty_plans": 1,
                "fallback_episodes": 1}
    with ResultStore(tmp_path / "o") as store:
        store.add_many(records)
        assert store.run_failures("r") == expected
    out = io.StringIO()
    bar = Progress("x", True, stream=out)
    bar.start(7, 0)
    for r in records:
        bar.update(r)
    assert ("1 errors, 1 timeouts, 2 with output errors (4 unusable replies), 1 failed on an empty plan, "
            "1 with fallback actions, elapsed") in bar.line()
    assert failures_text({}) == "0 errors"  # progress lines name only the kinds that happened
    assert failures_text({}, full=True) == ("0 errors, 0 timeouts, 0 with output errors (0 unusable replies), "
                                            "0 failed on an empty plan, 0 with fallback actions")


def test_the_runner_records_fallback_plans(tmp_path):
    """An agent reply with an output error *and* actions runs those actions as a fallback: the
    record counts it in ``planner_output_errors`` and in ``extra["fallback_plans"]``."""
    from envs.eb_alfred.suite import EBAlfredSuite
    from harness.run.runner import Runner
    from harness.types import RunSpec

    from tests.helpers import fallback_oracle

    suite = EBAlfredSuite(render=False, generated_per_split=40)
    spec = RunSpec(suite="eb_alfred", split="seen", agent="oracle", variant="v", limit=2, batch_size=2)
    with ResultStore(tmp_path) as store:
        summary = Runner(spec, suite, fallback_oracle(), store).run()
        failures = store.run_failures(summary.run_id)
    assert all(r.extra.get("fallback_plans", 0) >= 1 for r in summary.records)
    assert failures["fallback_episodes"] == 2 and failures["output_error_episodes"] == 2, failures
