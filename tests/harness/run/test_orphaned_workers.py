"""Workers of ``executor=process`` whose parent died (SIGKILL, the OOM killer) exit at once and
quietly: a worker finishing a step finds the pipe gone and ends without a BrokenPipeError
traceback, an idle one ends at the pipe's EOF; none is left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.harness.run.test_signals_process_group import rows
from tests.helpers import process_group_alive

REPO = Path(__file__).resolve().parents[3]


def test_workers_of_a_killed_parent_exit_quietly(tmp_path):
    from tests.helpers import require_example_plugin

    require_example_plugin()
    args = [sys.executable, "-m", "harness.cli", "run", "suite=example", "planner=random", "limit=20000",
            "suite.params.episodes_per_split=20000", "progress=false",
            "executor=process", "executor.num_workers=4", "out=t"]
    proc = subprocess.Popen(args, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while rows(tmp_path / "t" / "results.sqlite") < 300 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before the kill"
        time.sleep(0.3)  # steps in flight in every worker
        proc.send_signal(signal.SIGKILL)  # the parent alone: its workers stay to find it gone
        _, err = proc.communicate(timeout=60)  # EOF once every worker holding stderr has exited
        deadline = time.monotonic() + 30
        while process_group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not process_group_alive(proc.pid), "a worker outlived its parent"
    finally:
        if process_group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    assert "Traceback" not in err and "BrokenPipeError" not in err, err[-3000:]


WORKER = """
import multiprocessing as mp
from envs.eb_alfred.suite import EBAlfredSuite
from harness.run.executors import SuiteEnvFactory, _worker_main

params = {"render": False, "generated_per_split": 2}
episode = EBAlfredSuite(**params).episodes("seen")[0]
parent, child = mp.Pipe()
parent.send(("reset", {"episode": episode}, 0))  # a step the worker takes ...
parent.close()  # ... while its parent dies: the reply has nowhere to go
_worker_main(child, SuiteEnvFactory("eb_alfred", params))
print("worker returned")
"""


def test_a_worker_whose_reply_finds_the_parent_gone_returns_quietly(tmp_path):
    """The race the kill above may or may not hit, made certain: the worker's reply to a step
    meets a closed pipe (BrokenPipeError); the worker returns, no traceback."""
    env = {**os.environ, "PYTHONPATH": str(REPO),
           "EB_ALFRED_DATA_DIR": os.environ.get("EB_ALFRED_DATA_DIR", "")}
    res = subprocess.run([sys.executable, "-c", WORKER], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0 and "worker returned" in res.stdout, res.stderr[-3000:]
    assert "Traceback" not in res.stderr and "BrokenPipeError" not in res.stderr, res.stderr[-3000:]
