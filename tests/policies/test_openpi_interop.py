"""Interoperability with openpi's own packages from PyPI (openpi-client 0.1.2,
openpi-server 0.1.0), run in their own venv (they pin numpy<2):

* our ``remote`` client against openpi-server's WebsocketPolicyServer;
* openpi-client's WebsocketClientPolicy against ``harness serve-policy policy=vla``.

slow + ci: building the venv takes ~10 s with a warm pip cache (once; then it
is reused), the two tests ~20 s.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from harness.params import identity_of
from policies import protocols as P
from policies.remote import RemotePolicy
from tests.policies.conftest import expected_chunk, libero_obs, request
from tests.policies.openpi_ref import openpi_python

HERE = Path(__file__).parent
REPO = HERE.parent.parent
pytestmark = [pytest.mark.slow, pytest.mark.ci]


@pytest.fixture(scope="module")
def ref_python() -> Path:
    try:
        return openpi_python()
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot build the openpi reference venv (package registry unreachable?): {exc}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(port: int, proc: subprocess.Popen, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("server did not become healthy")


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_our_client_against_openpi_server(ref_python):
    port = _free_port()
    proc = subprocess.Popen([str(ref_python), str(HERE / "openpi_ref_server.py"), str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_healthy(port, proc)
        client = RemotePolicy(url=f"ws://127.0.0.1:{port}", protocol="openpi", backoff_s=0.1)
        assert client.metadata["checkpoint"] == "scripted-reference"
        np.testing.assert_array_equal(client.metadata["reset_pose"], np.arange(7, dtype=np.float32))
        obs = [libero_obs(i) for i in range(3)]
        chunks = client.act([request(o) for o in obs])  # pipelined on one connection
        for o, c in zip(obs, chunks):
            sent = {**o, "agentview_image": P.resize_with_pad(o["agentview_image"], 224),
                    "wrist_image": P.resize_with_pad(o["wrist_image"], 224)}
            np.testing.assert_allclose(c, expected_chunk(sent), atol=1e-6)
        ident = client.identity()
        assert identity_of(client.params)["remote"]["protocol"] == "openpi"
        assert ident["server_metadata"] and ident["replan_steps"] == 5
        # a policy exception: openpi's server sends the traceback and closes; we raise its last line
        with pytest.raises(RuntimeError, match="scripted failure"):
            client.act([request(libero_obs(5, instruction="explode"))])
        # ... and the next call reconnects to the same server (same metadata)
        assert client.act([request(libero_obs(6))])[0].shape == (6, 7)
        # the server goes away for good: ConnectionError (the runner's agent error record)
        _stop(proc)
        client.connect_retries, client.backoff_s = 2, 0.05
        with pytest.raises(ConnectionError):
            client.act([request(libero_obs(7))])
    finally:
        if proc.poll() is None:
            _stop(proc)


@pytest.fixture(scope="module")
def tiny_vla(tmp_path_factory) -> Path:
    pytest.importorskip("transformers", reason="the vla policy needs the models extra")
    from policies.vla import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("vla") / "ckpt", seed=3, chunk_size=5, lora=True)


def _serve_policy(args: list[str]) -> tuple[subprocess.Popen, int]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "serve-policy", *args, "port=0"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    lines = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            raise AssertionError(f"serve-policy exited {proc.returncode}: {''.join(lines)}")
        lines.append(line)
        m = re.search(r"serving policy \S+ on ws://127\.0\.0\.1:(\d+)", line)
        if m:
            return proc, int(m.group(1))
    proc.kill()
    raise AssertionError(f"serve-policy did not start: {''.join(lines)}")


def test_openpi_client_against_harness_serve_policy(ref_python, tiny_vla, tmp_path):
    from policies.vla import VLAPolicy

    proc, port = _serve_policy(["policy=vla", f"policy.params.checkpoint={tiny_vla}", "policy.params.allow_untrained_head=true"])
    try:
        _wait_healthy(port, proc)
        obs = [libero_obs(10 + i, instruction=f"put the cream cheese in the bowl {i}", size=224) for i in range(3)]
        np.savez(tmp_path / "in.npz", prompts=np.array([o["instruction"] for o in obs]),
                 **{f"obs{i}/{k}": o[src] for i, o in enumerate(obs)
                    for k, src in (("image", "agentview_image"), ("wrist_image", "wrist_image"), ("state", "state"))})
        run = subprocess.run([str(ref_python), str(HERE / "openpi_ref_client.py"), str(port), str(tmp_path / "in.npz"),
                              str(tmp_path / "out.npz"), str(tmp_path / "out.json")],
                             capture_output=True, text=True, timeout=180)
        assert run.returncode == 0, run.stderr[-3000:]
    finally:
        _stop(proc)
    got = np.load(tmp_path / "out.npz")
    info = json.loads((tmp_path / "out.json").read_text())
    local = VLAPolicy(checkpoint=str(tiny_vla), allow_untrained_head=True)
    assert info["metadata"]["policy"] == "vla"
    assert info["metadata"]["policy_identity"] == json.loads(json.dumps(local.identity()))
    want = local.predict(obs, [o["instruction"] for o in obs])
    for i in range(3):
        assert got[f"actions{i}"].shape == (5, 7)
        np.testing.assert_allclose(got[f"actions{i}"], want[i], atol=1e-4)
    assert info["error"] and "observation/wrist_image" in info["error"]  # traceback text, then close


def test_image_resize_matches_openpi_clients(ref_python, tmp_path):
    """Our client resizes as openpi's LIBERO example does (image_tools.resize_with_pad to 224)."""
    rng = np.random.default_rng(0)
    images = {"square": rng.integers(0, 256, (256, 256, 3), dtype=np.uint8),
              "wide": rng.integers(0, 256, (128, 256, 3), dtype=np.uint8),
              "tall": rng.integers(0, 256, (300, 200, 3), dtype=np.uint8)}
    np.savez(tmp_path / "img.npz", **images)
    script = ("import sys, numpy as np; from openpi_client import image_tools as t; d = np.load(sys.argv[1]); "
              "np.savez(sys.argv[2], **{k: t.resize_with_pad(d[k], 224, 224) for k in d.files})")
    subprocess.run([str(ref_python), "-c", script, str(tmp_path / "img.npz"), str(tmp_path / "ref.npz")], check=True)
    ref = np.load(tmp_path / "ref.npz")
    for name, img in images.items():
        np.testing.assert_array_equal(P.resize_with_pad(img, 224), ref[name], err_msg=name)
