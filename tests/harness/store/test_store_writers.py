"""One writer at a time, with two real ``harness run`` processes on one output directory.

The first is held mid-run by a gate (tests/harness/gated_cli.py: the real CLI and random
planner, waiting before episode 20 until killed). While it lives, a second ``harness run``
on the same ``out=`` is refused in one line (exit 2) and writes nothing; ``harness table``
reads a consistent snapshot meanwhile. Once the first is killed (SIGKILL: no clean-up), a
rerun takes over at once and finishes the run with every episode stored exactly once.
"""

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
FAST = ["suite.params.render=false", "suite.params.generated_per_split=40", "progress=false"]
RUN = ["run", "planner=random", "split=seen", "limit=40", "executor.batch_size=1", *FAST]


def env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO)}


@pytest.mark.ci
def test_a_second_writer_is_refused_while_the_first_lives_and_takes_over_after(tmp_path):
    gate = tmp_path / "gate"
    gate.mkdir()
    first = subprocess.Popen([sys.executable, "-m", "tests.harness.gated_cli", str(gate), "20", *RUN, "out=o"],
                             cwd=tmp_path, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (gate / "blocked").exists():
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first run never reached its gate"
            time.sleep(0.1)
        time.sleep(1.5)  # the writer's watchdog commits what finished before the gate
        second = subprocess.run([sys.executable, "-m", "harness.cli", *RUN, "out=o"], cwd=tmp_path, env=env(),
                                capture_output=True, text=True, timeout=120)
        lines = [line for line in second.stderr.splitlines() if line.strip()]
        assert second.returncode == 2 and len(lines) == 1, second.stderr
        assert "being written by `harness run` (pid " in lines[0] and f"pid {first.pid}" in lines[0], lines[0]
        # a reader meanwhile: one snapshot, every row it shows is whole
        table = subprocess.run([sys.executable, "-m", "harness.cli", "table", "o"], cwd=tmp_path, env=env(),
                               capture_output=True, text=True, timeout=120)
        assert table.returncode == 0 and "random" in table.stdout, table.stderr
        assert first.poll() is None  # still alive, still the writer
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    third = subprocess.run([sys.executable, "-m", "harness.cli", *RUN, "out=o"], cwd=tmp_path, env=env(),
                           capture_output=True, text=True, timeout=120)
    assert third.returncode == 0 and "40/40 done" in third.stderr, third.stderr
    assert " 0 resumed" not in third.stderr  # it took over the first run's episodes
    db = sqlite3.connect(tmp_path / "o" / "results.sqlite")
    (rows, keys), = db.execute("SELECT COUNT(*), COUNT(DISTINCT run_id || suite || split || episode_id || seed) "
                               "FROM episodes NOT INDEXED").fetchall()
    db.close()
    assert rows == keys == 40
    assert not (tmp_path / "o" / "results.sqlite.lock").exists()  # released and removed at the end
