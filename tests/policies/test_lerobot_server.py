"""The LeRobot route: ``python -m policies.lerobot_server`` in LeRobot's own
environment (lerobot 0.6.1 needs Python >= 3.12 and torch < 2.12, so it cannot
share the harness's), a tiny random ACT policy saved with LeRobot's own
``save_pretrained``, and our ``remote`` client (openpi protocol) against it;
the chunks must equal what LeRobot's own evaluation path computes.

slow only, not ci: the LeRobot venv (Python 3.12 + lerobot + a CUDA-build
torch from the registry, ~3.7 GB) takes ~2.5 min to build with a warm pip
cache, and CI machines have only Python 3.11. The test skips (saying why)
where no Python >= 3.12 is found (``$LEROBOT_PYTHON`` or python3.12/3.13 on
PATH or under pyenv).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from policies.remote import RemotePolicy
from tests.policies.conftest import libero_obs, request
from tests.policies.openpi_ref import venv_root
from tests.policies.test_openpi_interop import _stop, _wait_healthy

HERE = Path(__file__).parent
REPO = HERE.parent.parent
LEROBOT_PACKAGES = ("lerobot==0.6.1", "websockets", "msgpack")
pytestmark = pytest.mark.slow


def _python312() -> str | None:
    cands = [os.environ.get("LEROBOT_PYTHON"), shutil.which("python3.12"), shutil.which("python3.13")]
    cands += [str(p) for p in sorted(Path.home().glob(".pyenv/versions/3.1[23]*/bin/python"))]
    for c in cands:
        if c and subprocess.run([c, "-c", "import sys; assert sys.version_info >= (3, 12)"],
                                capture_output=True).returncode == 0:
            return c
    return None


@pytest.fixture(scope="module")
def lerobot_python() -> Path:
    base = _python312()
    if base is None:
        pytest.skip("lerobot 0.6.1 needs Python >= 3.12: none found (set LEROBOT_PYTHON)")
    root = venv_root()
    root.mkdir(parents=True, exist_ok=True)
    venv = root / "lerobot-ref"
    marker = venv / "installed.txt"
    want = "\n".join(LEROBOT_PACKAGES)
    with open(root / ".lerobot-ref.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (marker.is_file() and marker.read_text() == want):
            subprocess.run([base, "-m", "venv", "--clear", str(venv)], check=True, capture_output=True)
            proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *LEROBOT_PACKAGES],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                pytest.skip(f"cannot install {LEROBOT_PACKAGES}: {proc.stderr[-1500:]}")
            marker.write_text(want)
    return venv / "bin" / "python"


def test_remote_client_against_lerobot_server_matches_lerobots_own_eval(lerobot_python, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    ckpt = tmp_path / "act"
    subprocess.run([str(lerobot_python), str(HERE / "lerobot_tiny.py"), "build", str(ckpt)], check=True, env=env,
                   capture_output=True, timeout=600)
    obs = [libero_obs(20 + i, instruction=f"put the bowl in drawer {i}") for i in range(2)]
    np.savez(tmp_path / "in.npz", prompts=np.array([o["instruction"] for o in obs]),
             **{f"obs{i}/{k}": o[src] for i, o in enumerate(obs)
                for k, src in (("image", "agentview_image"), ("wrist_image", "wrist_image"), ("state", "state"))})
    ref = subprocess.run([str(lerobot_python), str(HERE / "lerobot_tiny.py"), "predict", str(ckpt),
                          str(tmp_path / "in.npz"), str(tmp_path / "ref.npz")], env=env, capture_output=True,
                         text=True, timeout=600)
    assert ref.returncode == 0, ref.stderr[-3000:]
    want = np.load(tmp_path / "ref.npz")

    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(lerobot_python), "-m", "policies.lerobot_server", "--policy", str(ckpt),
                             "--port", str(port)], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        _wait_healthy(port, proc, timeout_s=180)
        client = RemotePolicy(url=f"ws://127.0.0.1:{port}", protocol="openpi", resize=0, backoff_s=0.1)
        assert client.replan_steps == 10  # the server's n_action_steps, not openpi's 5
        assert client.identity()["served"]["type"] == "act"
        chunks = client.act([request(o) for o in obs])  # one batched LeRobot forward
    finally:
        _stop(proc)
    for i, c in enumerate(chunks):
        assert c.shape == (10, 7)
        np.testing.assert_allclose(c, want[f"actions{i}"], atol=1e-4)


def test_in_process_lerobot_policy_inside_lerobots_environment(lerobot_python, tmp_path):
    """policy=lerobot where lerobot imports: the harness's Agent API from LeRobot's venv."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    ckpt = tmp_path / "act"
    subprocess.run([str(lerobot_python), str(HERE / "lerobot_tiny.py"), "build", str(ckpt)], check=True, env=env,
                   capture_output=True, timeout=600)
    script = f"""
import numpy as np
from harness.registry.catalog import POLICIES
from harness.interfaces import AgentRequest
from harness.types import EpisodeSpec
p = POLICIES.build("lerobot", policy={str(ckpt)!r})
rng = np.random.default_rng(0)
obs = [dict(agentview_image=rng.integers(0, 256, (256, 256, 3), dtype=np.uint8),
            wrist_image=rng.integers(0, 256, (256, 256, 3), dtype=np.uint8),
            state=rng.uniform(-.5, .5, 8).astype(np.float32), instruction="open the drawer") for _ in range(2)]
ep = EpisodeSpec("libero", "libero_spatial", "t0/0", 7, "open the drawer")
batch = p.act([AgentRequest(ep, o, {{}}) for o in obs])
single = p.act([AgentRequest(ep, obs[1], {{}})])[0]
assert p.replan_steps == 10 and p.identity()["type"] == "act", p.identity()
assert [c.shape for c in batch] == [(10, 7), (10, 7)]
assert np.allclose(batch[1], single, atol=1e-5) and not np.allclose(batch[0], batch[1])
print("ok")
"""
    run = subprocess.run([str(lerobot_python), "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-3000:]
