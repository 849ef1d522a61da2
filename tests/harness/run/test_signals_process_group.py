"""A signal to the whole process group (Ctrl-C in a terminal, ``kill -- -PGID``, a scheduler
stopping a job) with ``executor=process``: the workers die with the main process, and the
user still sees one line -- no tracebacks of the threads that were talking to them."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def rows(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.1) as conn:
            return conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_process_group_is_one_line(tmp_path, sig):
    from tests.helpers import require_example_plugin

    require_example_plugin()
    args = [sys.executable, "-m", "harness.cli", "run", "suite=example", "planner=random", "limit=20000",
            "suite.params.episodes_per_split=20000", "progress=false",
            "executor=process", "executor.num_workers=2", "out=t"]
    proc = subprocess.Popen(args, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 90
        while rows(tmp_path / "t" / "results.sqlite") < 300 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before the signal"
        time.sleep(0.3)  # episodes in flight in both workers
        os.killpg(proc.pid, sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 128 + sig, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"harness: stopped by {signal.Signals(sig).name}")


def test_a_pipe_closed_under_a_feeder_by_the_interrupt_is_no_traceback(monkeypatch):
    """The race behind those tracebacks, made certain: the interrupt's ``close()`` closes a
    worker's pipe just before its feeder thread waits on it (``OSError: handle is closed``)."""
    import threading

    from harness.run import executors
    from harness.run.executors import ProcessExecutor, SuiteEnvFactory

    ex = ProcessExecutor(SuiteEnvFactory("eb_alfred", {"render": False, "generated_per_split": 2}), workers=1)
    in_wait, closed = threading.Event(), threading.Event()
    real_wait = executors.wait

    def wait_after_close(conns, timeout=None):
        in_wait.set()
        closed.wait(10)
        return real_wait(conns, timeout=timeout)

    monkeypatch.setattr(executors, "wait", wait_after_close)
    raised: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    delivered: list = []
    ex.start(lambda slot, result: delivered.append(result))
    ex.submit_reset([(0, {})])
    assert in_wait.wait(60)
    ex.close()
    closed.set()
    time.sleep(0.5)
    assert raised == [] and delivered == []


def test_a_stopped_process_does_not_wait_for_an_abandoned_call():
    """After a stop signal (status 128 + signal), a thread still held by a call does not keep
    the process alive for the call's own limit: it ends within the grace, with that status;
    without a stop, Python waits for the thread as usual."""
    import subprocess
    import sys
    import time

    code = ("import threading, time, sys; from harness.cli import entry as cli\n"
            "threading.Thread(target=time.sleep, args=(8,)).start()\n"  # a call a server holds for 8 s
            "print('stop line', file=sys.stderr); cli._exit_if_stopped_with_calls_left(STATUS)\n"
            "sys.exit(0)\n")
    for status, quick in ((143, True), (0, False)):
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-c", code.replace("STATUS", str(status))], capture_output=True,
                              text=True, timeout=60)
        elapsed = time.monotonic() - start
        assert proc.returncode == status and "stop line" in proc.stderr, proc.stderr
        assert (elapsed < 6) if quick else (elapsed >= 8), (status, elapsed)
