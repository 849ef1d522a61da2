"""``harness run +experiment=libero_four_suites`` with one served VLA per variant, each server
started by the harness from a configured command (``harness serve-policy policy=vla`` on a tiny
random checkpoint, speaking StarVLA's protocol on loopback), on the real LIBERO simulator: all four
suites' slice (task 0, init state 0, a few steps), the table printed; the last variant's server
killed after its first episode, which leaves error records (never successes) that a rerun of the
same command re-runs."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.policies.test_openpi_interop import _free_port

REPO = Path(__file__).resolve().parents[2]
pytest.importorskip("transformers", reason="the vla policy needs the models extra")
pytest.importorskip("robosuite", reason="LIBERO needs the libero extra")

VARIANTS = ("base", "favor_sft", "cfg_sft")
ENV_NAMES = {"base": "BASE_VLA", "favor_sft": "FAVOR_SFT_VLA", "cfg_sft": "CFG_SFT_VLA"}
SPLITS = ("libero_spatial", "libero_object", "libero_goal", "libero_10")


def _rows(out: Path, sql: str) -> list[dict]:
    con = sqlite3.connect(out / "results.sqlite")
    try:
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur]
    finally:
        con.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.ci
def test_three_served_variants_one_at_a_time(tmp_path):
    from harness.util.checkpoint_identity import path_digest
    from policies.vla import build_tiny_checkpoint

    env = {**os.environ, "PYTHONPATH": str(REPO), "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"),
           "HF_HUB_OFFLINE": "1",
           "VLA_SERVE_COMMAND": f"{sys.executable} -m harness.cli serve-policy policy=vla "
                                "policy.params.checkpoint={checkpoint} policy.params.allow_untrained_head=true "
                                "port={port}"}
    ckpts = {}
    for i, v in enumerate(VARIANTS):
        ckpts[v] = build_tiny_checkpoint(tmp_path / f"ckpt_{v}", seed=10 + i, chunk_size=4)
        env[ENV_NAMES[v]] = str(ckpts[v])
        env[f"{ENV_NAMES[v]}_URL"] = f"ws://127.0.0.1:{_free_port()}"
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "harness.cli", "run", "+experiment=libero_four_suites", f"out={out}",
           "progress=false", "suite.params.tasks=[0]", "suite.params.trials=1", "suite.params.max_steps=12",
           "policy.params.connect_retries=2", "policy.params.backoff_s=0.1", "policy.params.timeout_s=30"]

    # run 1: kill cfg_sft's server 1.5 s into its first episode (an episode of 12 steps with both
    # cameras rendered takes several seconds here; the env is already built by the earlier variants)
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    killed = None
    deadline = time.monotonic() + 900
    while proc.poll() is None and time.monotonic() < deadline:
        if killed is None and any("serve: variant cfg_sft answers" in ln for ln in lines):
            time.sleep(1.5)
            killed = json.loads((out / "servers" / "cfg_sft.json").read_text())["pid"]
            os.killpg(killed, signal.SIGKILL)
        time.sleep(0.05)
    proc.wait(timeout=60)
    reader.join(timeout=10)
    stderr = "".join(lines)
    assert killed is not None, "cfg_sft's server was never seen serving: " + stderr[-3000:]
    # the episode in flight is an error record; the next run's client finds no server: a one-line
    # usage error (exit 2) that names it, with every finished episode saved
    assert proc.returncode == 2, stderr[-4000:]
    assert "unreachable" in stderr.strip().splitlines()[-1], stderr[-2000:]

    eps = _rows(out, "select * from episodes")
    done = [e for e in eps if e["variant"] != "cfg_sft"]
    assert {(e["variant"], e["split"]) for e in done} == {(v, s) for v in VARIANTS[:2] for s in SPLITS}
    assert all(e["error_kind"] is None and e["steps"] == 12 for e in done)
    errors = [e for e in eps if e["variant"] == "cfg_sft"]
    assert len(errors) == 1 and errors[0]["error_kind"] is not None and not errors[0]["success"], errors
    # each variant's server was started from its checkpoint and stopped (or found dead)
    for v in VARIANTS:
        record = json.loads((out / "servers" / f"{v}.json").read_text())
        assert record["checkpoint"] == str(ckpts[v].resolve()) and not _alive(record["pid"])
    assert "serve: variant base's server stopped" in stderr
    assert "serve: variant cfg_sft's server had exited" in stderr

    # run 2, the same command: the finished episodes resume, cfg_sft's run against a fresh server
    again = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-4000:]
    assert again.stderr.count("0 episodes run, 1 resumed") == 8, again.stderr[-4000:]
    good = _rows(out, "select variant, split, steps from episodes where error_kind is null")
    assert {(e["variant"], e["split"]) for e in good} == {(v, s) for v in VARIANTS for s in SPLITS}
    assert len(good) == 12 and all(e["steps"] == 12 for e in good)
    runs = _rows(out, "select * from runs")
    ids = {r["variant"]: json.loads(r["identity"])["agent_params"]["remote"]["checkpoint_id"] for r in runs}
    assert ids == {v: f"ckpt_{v}@sha256:{path_digest(ckpts[v])}" for v in VARIANTS}
    assert not _alive(json.loads((out / "servers" / "cfg_sft.json").read_text())["pid"])

    table = subprocess.run([sys.executable, "-m", "harness.cli", "table", str(out), "--experiment",
                            "libero_four_suites"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert table.returncode == 0, table.stderr[-2000:]
    for label in ("Base", "FAVOR-SFT", "CFG-SFT", "Spatial", "Object", "Goal", "Long"):
        assert label in table.stdout, table.stdout
