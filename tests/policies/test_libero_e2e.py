"""End to end on loopback with the real LIBERO simulator:
``harness run suite=libero ... policy=remote`` against ``harness serve-policy policy=vla``
(a tiny random checkpoint: it does not solve the task; the test checks that
every hop works - observations out, chunks back, replan_steps honoured, the
served checkpoint in the run identity), and a server that goes away mid-run
turning into agent error records.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.policies.test_openpi_interop import _serve_policy, _stop, _wait_healthy

REPO = Path(__file__).resolve().parents[2]
pytest.importorskip("transformers", reason="the vla policy needs the models extra")
pytest.importorskip("robosuite", reason="LIBERO needs the libero extra")

STEPS = 20  # shortened step budget: 4 openpi calls of 5 actions


@pytest.fixture(scope="module")
def tiny_vla(tmp_path_factory) -> Path:
    from policies.vla import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("vla") / "ckpt", seed=5, chunk_size=10)


def _harness_run(args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    return subprocess.run([sys.executable, "-m", "harness.cli", "run", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def _rows(out: Path, table: str) -> list[dict]:
    con = sqlite3.connect(out / "results.sqlite")
    cur = con.execute(f"select * from {table}")
    cols = [d[0] for d in cur.description]
    rows = [dict(zip(cols, r)) for r in cur]
    con.close()
    return rows


def _run_args(port: int, protocol: str, out: Path, *extra: str) -> list[str]:
    return ["suite=libero", "split=libero_spatial", "policy=remote", f"policy.params.protocol={protocol}",
            f"policy.params.url=ws://127.0.0.1:{port}", "suite.params.tasks=[0]", "suite.params.trials=1",
            f"suite.params.max_steps={STEPS}", f"out={out}", "progress=false", *extra]


@pytest.mark.slow
@pytest.mark.ci
def test_remote_openpi_against_serve_policy_vla_on_libero(tiny_vla, tmp_path):
    proc, port = _serve_policy(["policy=vla", f"policy.params.checkpoint={tiny_vla}", "policy.params.allow_untrained_head=true"])
    try:
        _wait_healthy(port, proc)
        res = _harness_run(_run_args(port, "openpi", tmp_path / "out"))
        assert res.returncode == 0, res.stderr[-3000:]
    finally:
        _stop(proc)
    (ep,) = _rows(tmp_path / "out", "episodes")
    assert ep["error_kind"] is None, ep["error_message"]
    assert ep["episode_id"] == "libero_spatial/t00/i00" and ep["seed"] == 7
    assert ep["steps"] == STEPS and ep["termination"] == "max_steps"
    assert ep["agent_calls"] == STEPS // 5  # openpi's replan_steps: 5 of each 10-action chunk
    (run,) = _rows(tmp_path / "out", "runs")
    stored = json.loads(run["identity"])
    ident = stored["agent_identity"]  # the protocol is a declared parameter: hashed from agent_params
    assert stored["agent_params"]["remote"]["protocol"] == "openpi" and ident["served"]["policy"] == "vla"
    from policies.vla import VLAPolicy

    assert ident["served"]["head"] == VLAPolicy(checkpoint=str(tiny_vla), allow_untrained_head=True).identity()["head"]
    assert "127.0.0.1" not in run["identity"]


@pytest.mark.slow
def test_remote_starvla_against_serve_policy_vla_on_libero(tiny_vla, tmp_path):
    proc, port = _serve_policy(["policy=vla", f"policy.params.checkpoint={tiny_vla}", "policy.params.allow_untrained_head=true"])
    try:
        _wait_healthy(port, proc)
        res = _harness_run(_run_args(port, "starvla", tmp_path / "out",
                                     f"policy.params.stats_path={tiny_vla}", "policy.params.send_state=true"))
        assert res.returncode == 0, res.stderr[-3000:]
    finally:
        _stop(proc)
    (ep,) = _rows(tmp_path / "out", "episodes")
    assert ep["error_kind"] is None, ep["error_message"]
    assert ep["steps"] == STEPS and ep["agent_calls"] == 2  # the whole 10-action chunk per call


@pytest.mark.slow
@pytest.mark.ci
def test_server_that_stays_down_gives_agent_error_records(tmp_path):
    from harness.registry.catalog import SUITES
    from harness.run.runner import Runner
    from harness.store import ResultStore
    from harness.types import RunSpec
    from policies.remote import RemotePolicy
    from policies.server import PolicyServer, PolicyService
    from tests.policies.conftest import ScriptedPolicy

    server = PolicyServer(PolicyService(ScriptedPolicy()), port=0).start_background()
    agent = RemotePolicy(url=f"ws://127.0.0.1:{server.port}", connect_retries=2, backoff_s=0.05)
    server.stop()  # gone before the first observation is sent
    params = {"tasks": [0], "trials": 2, "max_steps": STEPS}
    suite = SUITES.build("libero", **params)
    spec = RunSpec(suite="libero", split="libero_spatial", agent="remote", variant="remote", agent_kind="policy",
                   suite_params=params)
    with ResultStore(tmp_path) as store:
        summary = Runner(spec, suite, agent, store).run()
    assert summary.finished == 2 and summary.errors == 2
    rows = _rows(tmp_path, "episodes")
    assert {r["error_kind"] for r in rows} == {"agent"}
    assert all("unreachable" in r["error_message"] for r in rows)
    assert all(r["steps"] == 0 for r in rows)


@pytest.mark.slow
def test_vla_in_process_on_libero(tiny_vla, tmp_path):
    res = _harness_run(["suite=libero", "split=libero_spatial", "policy=vla", f"policy.params.checkpoint={tiny_vla}", "policy.params.allow_untrained_head=true",
                        "suite.params.tasks=[0]", "suite.params.trials=1", f"suite.params.max_steps={STEPS}",
                        f"out={tmp_path}", "progress=false"])
    assert res.returncode == 0, res.stderr[-3000:]
    (ep,) = _rows(tmp_path, "episodes")
    assert ep["error_kind"] is None, ep["error_message"]
    assert ep["steps"] == STEPS and ep["agent_calls"] == 2  # whole 10-action chunks
