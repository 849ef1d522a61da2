"""SIGKILL a real `harness run` mid-run, rerun it, and compare with an uninterrupted run.

The kill lands mid-run by construction, not by timing: the killed run is the
real CLI with the real random planner, held at a gate (``tests/harness/gated_cli.py``)
before it answers for any episode with index >= K, so episodes K.. can never
finish before the kill; the store's writer commits finished episodes while the
run waits at the gate, so the kill always finds between 1 and K rows, with
episodes in flight.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.helpers import committed_rows, wait_at_gate

REPO = Path(__file__).resolve().parents[3]
N = 40
K = N // 2  # the gate: episodes with index >= K wait
BATCH = 4
ARGS = ["planner=random", "split=seen", f"limit={N}", "suite.params.generated_per_split=40",
        f"executor.batch_size={BATCH}", "progress=false"]


def spawn(*cmd: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", *cmd], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def harness(*args: str) -> subprocess.Popen:
    return spawn("harness.cli", *args)


def table(outdir: Path) -> str:
    proc = harness("table", str(outdir), "--baseline", "random")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return out


def test_sigkill_then_rerun_matches_uninterrupted_run(tmp_path):
    """Mutations this catches: a store that loses or duplicates committed rows on
    SIGKILL, a resume that reruns recorded episodes (or skips unrecorded ones),
    and any difference between a resumed and an uninterrupted run's table."""
    clean, killed, gate = tmp_path / "clean", tmp_path / "killed", tmp_path / "gate"
    gate.mkdir()
    proc = harness("run", *ARGS, f"out={clean}")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err

    db = killed / "results.sqlite"
    proc = spawn("tests.harness.gated_cli", str(gate), str(K), "run", *ARGS, f"out={killed}")
    try:
        wait_at_gate(proc, gate, db, rows=1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    at_kill = committed_rows(db)
    print(f"rows at the kill: {at_kill} of {N}")
    assert 1 <= at_kill <= K, f"{at_kill} rows at the kill"

    proc = harness("run", *ARGS, f"out={killed}")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert f"{N - at_kill} episodes run, {at_kill} resumed" in err, err

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
        run_ids = con.execute("SELECT COUNT(DISTINCT run_id) FROM episodes").fetchone()[0]
    finally:
        con.close()
    assert rows == N and run_ids == 1
    assert table(killed) == table(clean)
