"""Stop signals repeated or mixed (a second Ctrl-C while a call hangs, SIGINT then SIGTERM, SIGHUP
then SIGINT) end ``harness run`` within the documented bound -- 2 s after the stop line
(``harness.cli.entry.STOPPED_CALL_GRACE_S``) -- with one line, status 128 + the first signal's number,
and no traceback (docs/reliability.md). The model server is a loopback socket that holds every
chat request without answering, so the run's call hangs for its whole ``request_timeout_s``
(300 s) unless the stop ends it."""

from __future__ import annotations

import os
import signal
import socketserver
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from tests.harness.util.test_hostile_servers import _read_request, serving
from tests.harness.run.test_reliability import FAST

pytest.importorskip("openai", reason="the openai backend needs the `models` extra")

REPO = Path(__file__).resolve().parents[3]
#: The documented bound past the stop line (harness.cli.entry.STOPPED_CALL_GRACE_S), plus room for a
#: loaded machine to deliver the signal and reap the process.
BOUND_S = 2.0 + 3.0


@contextmanager
def holding_server() -> Iterator[tuple[str, list]]:
    """A loopback server that answers ``GET`` with 404 at once and holds every ``POST`` (a chat
    call) unanswered for up to 120 s; yields its URL and the list of POSTs it holds."""
    posts: list = []
    stop = threading.Event()

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.settimeout(10)
            try:
                head, _ = _read_request(self.request)
                if head.startswith(b"POST"):
                    posts.append(head)
                    stop.wait(120)
                    return
                self.request.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            except OSError:
                return

    with serving(socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)) as port:
        try:
            yield f"http://127.0.0.1:{port}/v1", posts
        finally:
            stop.set()


def _hung_run(tmp_path: Path, url: str) -> subprocess.Popen:
    args = [sys.executable, "-m", "harness.cli", "run", "planner=vlm", "planner.params.backend=openai",
            "planner.params.model=m", f"planner.params.base_url={url}", "planner.params.max_retries=0",
            "planner.params.request_timeout_s=300", "split=seen", "limit=1", *FAST, "out=o"]
    return subprocess.Popen(args, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            # default dispositions, as from a terminal (a background CI job inherits
                            # SIGINT ignored)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for_the_call(server_requests: list, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 90
    while not server_requests:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never called the server"
        time.sleep(0.05)
    time.sleep(0.5)  # the call is now held by the server


@pytest.mark.parametrize("first,second", [(signal.SIGINT, signal.SIGINT), (signal.SIGINT, signal.SIGTERM),
                                          (signal.SIGHUP, signal.SIGINT)],
                         ids=["int-int", "int-term", "hup-int"])
def test_a_second_stop_signal_during_a_hung_call_ends_the_run_in_one_line(tmp_path, first, second):
    with holding_server() as (url, posts):
        proc = _hung_run(tmp_path, url)
        try:
            _wait_for_the_call(posts, proc)
            start = time.monotonic()
            proc.send_signal(first)
            time.sleep(0.3)  # inside the first signal's cleanup
            if proc.poll() is None:
                proc.send_signal(second)
            _, err = proc.communicate(timeout=60)
            elapsed = time.monotonic() - start
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 128 + first, (proc.returncode, err)
    assert "Traceback" not in err and len(lines) == 1, err
    assert lines[0].startswith(f"harness: stopped by {signal.Signals(first).name}; "), err
    assert elapsed < BOUND_S, elapsed


def test_one_stop_signal_during_a_hung_call_ends_the_run_within_the_bound(tmp_path):
    with holding_server() as (url, posts):
        proc = _hung_run(tmp_path, url)
        try:
            _wait_for_the_call(posts, proc)
            start = time.monotonic()
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
            elapsed = time.monotonic() - start
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 130, (proc.returncode, err)
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith("harness: stopped by SIGINT; "), err
    assert elapsed < BOUND_S, elapsed


def test_sigterm_then_sigint_end_a_hung_judge_in_one_line(tmp_path):
    """The same under ``harness judge``: three calls held by the server, SIGTERM, then Ctrl-C."""
    from tests.harness.util.test_hostile_servers import _answers, hostile_server
    from tests.harness import judge_fixtures as fx
    from tests.helpers import committed_rows

    with fx.registered_only_here():
        out = _answers(tmp_path, questions=8)
    with hostile_server("hang", answer_first=2) as url:
        cmd = [sys.executable, "-m", "tests.harness.judge_fixtures", "cli", "judge", str(out), "judge=openai",
               "judge.model=judge-a", f"judge.params.base_url={url}", "judge.params.max_concurrency=3",
               "judge.params.request_timeout_s=300"]
        proc = subprocess.Popen(cmd, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stderr=subprocess.PIPE,
                                text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            deadline = time.monotonic() + 60
            while committed_rows(out / "results.sqlite", "judgements") < 2:  # then 3 calls hang
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
            time.sleep(0.5)
            start = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            time.sleep(0.2)
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
            elapsed = time.monotonic() - start
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, err)
    # the judge's own start line, then the one stop line
    assert "Traceback" not in err and len([line for line in lines if "stopped by" in line]) == 1, err
    assert lines[-1].startswith("harness: stopped by SIGTERM; 2 verdict(s) judged in this invocation are saved"), err
    assert elapsed < BOUND_S, elapsed
