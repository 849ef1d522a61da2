"""Our ``remote`` client against StarVLA's "model server v3" (starVLA/starVLA 8904c0684e3f, current
0ed0aad2c83f), with a server written here from StarVLA's own code (plain msgpack, not policies.wire):

* handshake metadata as ``PolicyServerWrapper.metadata`` (deployment/model_server/policy_wrapper.py:139-147):
  ``env``, ``ckpt_path``, ``action_chunk_size``, ``available_unnorm_keys``, ``default_unnorm_key``;
* request as its LIBERO client (examples/simBenchmarks/LIBERO/eval_files/model2libero_interface.py:130-138):
  ``{"examples": [{"image": [primary, wrist], "lang"}], "unnorm_key", "do_sample", "use_ddim",
  "num_ddim_steps"}``, images resized with PIL bilinear to 224 (:115-128);
* reply as its websocket server (deployment/model_server/tools/websocket_policy_server.py:131-137):
  ``{"status": "ok", "ok": true, "type": "inference_result", "request_id", "data": {"actions": [B, T, 7]}}``
  already un-normalised (policy_wrapper.py:191-197), gripper column 1 = open / 0 = close, which its
  eval_libero.py:23-27 maps to LIBERO as ``1 - 2 * (v > 0.5)``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import msgpack
import numpy as np
import pytest
from PIL import Image

from policies.remote import RemotePolicy
from tests.policies.conftest import libero_obs, request
from tests.policies.test_starvla_protocol import ReferenceStarVLAServer, _dec, _enc

CHUNK = 8
REPO = Path(__file__).resolve().parents[2]


def actions_for(example) -> np.ndarray:
    """The reference server's 'model': un-normalised actions depending on images and instruction."""
    primary, wrist = example["image"]
    rows = [[primary.mean() / 255.0 - 0.5, wrist.mean() / 255.0 - 0.5, 0.01 * j, 0.02, -0.03,
             len(example["lang"]) / 1000.0, 1.0 if j % 3 else 0.0] for j in range(CHUNK)]
    return np.asarray(rows, dtype=np.float32)


class StarVLAV3Server(ReferenceStarVLAServer):
    def __init__(self, metadata: dict | None = None):
        super().__init__()
        self.metadata = metadata if metadata is not None else {
            "env": "starvla_policy_server", "ckpt_path": "/ckpts/qwen-gr00t-libero", "action_chunk_size": CHUNK,
            "available_unnorm_keys": ["libero_spatial_no_noops"], "default_unnorm_key": "libero_spatial_no_noops"}

    async def _handler(self, ws):
        self.connections += 1
        await ws.send(msgpack.packb(self.metadata, default=_enc, use_bin_type=True))
        async for frame in ws:
            msg = msgpack.unpackb(frame, object_hook=_dec, raw=False)
            self.requests.append(msg)
            rid = msg.get("request_id")
            if msg.get("type", "infer") != "infer":
                reply = {"status": "error", "ok": False, "type": "unknown", "request_id": rid,
                         "error": {"message": f"Unsupported message type '{msg.get('type')}'"}}
            else:
                batch = np.stack([actions_for(e) for e in msg["examples"]])
                reply = {"status": "ok", "ok": True, "type": "inference_result", "request_id": rid,
                         "data": {"actions": batch}}
            await ws.send(msgpack.packb(reply, default=_enc, use_bin_type=True))


def _bilinear(img: np.ndarray) -> np.ndarray:
    return np.asarray(Image.fromarray(img).resize((224, 224), Image.BILINEAR))


def test_v3_server_detected_request_shape_resize_and_actions():
    with StarVLAV3Server() as server:
        client = RemotePolicy(url=f"ws://127.0.0.1:{server.port}", protocol="starvla",
                              unnorm_key="libero_spatial_no_noops", backoff_s=0.05)
        assert client.reply_form == "unnormalized" and client.replan_steps == CHUNK
        obs = [libero_obs(i, instruction=f"pick up the bowl {i}") for i in range(2)]
        chunks = client.act([request(o) for o in obs])
        (msg,) = server.requests
        assert set(msg) == {"examples", "unnorm_key", "do_sample", "use_ddim", "num_ddim_steps"}
        assert msg["unnorm_key"] == "libero_spatial_no_noops" and msg["do_sample"] is False
        assert msg["use_ddim"] is True and msg["num_ddim_steps"] == 10
        for o, ex, chunk in zip(obs, msg["examples"], chunks):
            assert ex["lang"] == o["instruction"] and set(ex) == {"image", "lang"}
            np.testing.assert_array_equal(ex["image"][0], _bilinear(o["agentview_image"]))
            np.testing.assert_array_equal(ex["image"][1], _bilinear(o["wrist_image"]))
            want = actions_for(ex).astype(np.float64)
            want[:, 6] = 1.0 - 2.0 * (want[:, 6] > 0.5)  # 1 open -> -1, 0 close -> +1
            np.testing.assert_allclose(chunk, want, atol=1e-7)
        ident = client.identity()
        assert ident["reply_form"] == "unnormalized" and ident["resize_method"] == "PIL.BILINEAR"
        assert ident["unnorm_key"] == "libero_spatial_no_noops" and ident["action_stats"] is None


def test_the_form_is_a_parameter_and_in_the_identity(tmp_path):
    stats = tmp_path / "dataset_statistics.json"
    stats.write_text(json.dumps({"k": {"action": {"min": [-1] * 7, "max": [1] * 7}}}))
    with ReferenceStarVLAServer() as old, StarVLAV3Server() as v3:
        legacy = RemotePolicy(url=f"ws://127.0.0.1:{old.port}", protocol="starvla", stats_path=str(stats))
        assert legacy.reply_form == "normalized" and legacy.identity()["reply_form"] == "normalized"
        # a v3 server's metadata announces the form; the parameter overrides the detection
        with pytest.raises(ValueError, match="stats_path would be unused"):
            RemotePolicy(url=f"ws://127.0.0.1:{v3.port}", protocol="starvla", stats_path=str(stats))
        forced = RemotePolicy(url=f"ws://127.0.0.1:{v3.port}", protocol="starvla", stats_path=str(stats),
                              reply_form="normalized")
        with pytest.raises(ValueError, match="reply_form=unnormalized"):
            forced.act([request(libero_obs(0))])
        auto = RemotePolicy(url=f"ws://127.0.0.1:{v3.port}", protocol="starvla")
        assert auto.identity() != forced.identity()


STEPS = 4


@pytest.mark.slow
@pytest.mark.ci
def test_v3_server_drives_a_libero_pro_episode_through_harness_run(tmp_path):
    """A real LIBERO-PRO episode (libero_goal_lan task 0): the server receives, and the store keeps,
    the BDDL's own reworded instruction."""
    from tests.envs.libero.conftest import require_libero

    require_libero()
    with StarVLAV3Server() as server:
        env = {**os.environ, "PYTHONPATH": str(REPO), "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
        res = subprocess.run(
            [sys.executable, "-m", "harness.cli", "run", "suite=libero", "split=libero_goal_lan", "policy=remote",
             "policy.params.protocol=starvla", f"policy.params.url=ws://127.0.0.1:{server.port}",
             "suite.params.tasks=[0]", "suite.params.trials=1", f"suite.params.max_steps={STEPS}",
             f"out={tmp_path}", "progress=false"], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
        assert res.returncode == 0, res.stderr[-3000:]
    con = sqlite3.connect(tmp_path / "results.sqlite")
    con.row_factory = sqlite3.Row
    (ep,) = con.execute("select * from episodes").fetchall()
    (run,) = con.execute("select * from runs").fetchall()
    assert ep["error_kind"] is None, ep["error_message"]
    assert ep["steps"] == STEPS and ep["agent_calls"] == 1  # one 8-action chunk covers the 4 steps
    assert json.loads(ep["extra"])["instruction"] == "open the cabinet\u2019s middle drawer"
    assert [e["lang"] for m in server.requests for e in m["examples"]] == ["open the cabinet\u2019s middle drawer"]
    assert all(im.shape == (224, 224, 3) for m in server.requests for e in m["examples"] for im in e["image"])
    assert json.loads(run["identity"])["agent_identity"]["reply_form"] == "unnormalized"
