"""SIGKILL a real `harness run` halfway, rerun it, and compare with an uninterrupted run."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
N = 40
ARGS = ["planner=random", "split=seen", f"limit={N}", "suite.params.generated_per_split=40",
        "executor.batch_size=4", "progress=false"]


def harness(*args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def finished_rows(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=1) as con:
            return con.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def table(outdir: Path) -> str:
    proc = harness("table", str(outdir), "--baseline", "random")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return out


def test_sigkill_then_rerun_matches_uninterrupted_run(tmp_path):
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    proc = harness("run", *ARGS, f"out={clean}")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err

    proc = harness("run", *ARGS, f"out={killed}")
    db = killed / "results.sqlite"
    deadline = time.monotonic() + 300
    while finished_rows(db) < N // 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    at_kill = finished_rows(db)
    assert 0 < at_kill < N, f"kill landed outside the run ({at_kill} of {N} rows)"

    proc = harness("run", *ARGS, f"out={killed}")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert f"{N - at_kill} episodes run, {at_kill} resumed" in err, err

    with sqlite3.connect(db) as con:
        rows, keys = con.execute(
            "SELECT COUNT(*), COUNT(DISTINCT run_id || suite || split || episode_id || seed) FROM episodes"
        ).fetchone()
    assert rows == keys == N
    assert table(killed) == table(clean)
