"""Our ``remote`` client (protocol=starvla) against a StarVLA-style server written
here from StarVLA's own server and client (starVLA/starVLA; no
package exists): msgpack frames with numpy arrays as binary-keyed maps, a
metadata dict on connect, ``{"examples": [{"image": [primary, wrist], "lang"}],
"do_sample", "use_ddim", "num_ddim_steps"}`` -> ``{"status": "ok", "ok": true,
"type": "inference_result", "data": {"normalized_actions": [B, chunk, 7]}}``;
policy errors answer ``{"ok": false, "error": {"message"}}`` and keep the
connection open. The server's codec is written here with plain msgpack, not
with policies.wire, so a codec mistake on our side cannot cancel itself out.
"""

from __future__ import annotations

import asyncio
import json
import threading

import msgpack
import numpy as np
import pytest

from harness.params import identity_of
from policies.remote import RemotePolicy
from tests.policies.conftest import libero_obs, request

CHUNK = 4
STATS = {"libero_object_no_noops": {"action": {
    "min": [-0.8, -0.9, -0.7, -0.1, -0.2, -0.3, 0.0], "max": [0.8, 0.9, 0.7, 0.1, 0.2, 0.3, 1.0],
    "q01": [-0.6, -0.7, -0.5, -0.05, -0.1, -0.2, 0.0], "q99": [0.6, 0.7, 0.5, 0.05, 0.1, 0.2, 1.0],
    "mask": [True, True, True, True, True, True, False]}}}


def _enc(o):
    if isinstance(o, np.ndarray):
        return {b"__ndarray__": True, b"data": o.tobytes(), b"dtype": o.dtype.str, b"shape": list(o.shape)}
    if isinstance(o, np.generic):
        return {b"__npgeneric__": True, b"data": o.item(), b"dtype": o.dtype.str}
    raise TypeError(type(o))


def _dec(m):
    if b"__ndarray__" in m:
        return np.frombuffer(m[b"data"], dtype=np.dtype(m[b"dtype"])).reshape(m[b"shape"])
    return m


def normalized_for(example) -> np.ndarray:
    """The reference server's 'model': a chunk that depends on the images and
    the instruction, in [-1.5, 1.5] so clipping is exercised."""
    primary, wrist = example["image"]
    base = primary.mean() / 255.0 * 3.0 - 1.5
    rows = [np.array([base, -base, wrist.mean() / 255.0 * 2 - 1, 0.1 * j, -0.2, len(example["lang"]) / 100.0,
                      0.7 if j % 2 else 0.2]) for j in range(CHUNK)]
    return np.stack(rows).astype(np.float32)


class ReferenceStarVLAServer:
    def __init__(self):
        self.requests: list[dict] = []
        self.connections = 0
        self.port = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    def __enter__(self):
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc):
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    async def _main(self):
        import websockets.asyncio.server as srv

        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        async with srv.serve(self._handler, "127.0.0.1", 0, compression=None, max_size=None) as server:
            self.port = next(iter(server.sockets)).getsockname()[1]
            self._ready.set()
            await self._stop.wait()

    async def _handler(self, ws):
        self.connections += 1
        await ws.send(msgpack.packb({"model": "starvla-qwen-pi", "action_chunk": CHUNK}, default=_enc, use_bin_type=True))
        async for frame in ws:
            msg = msgpack.unpackb(frame, object_hook=_dec, raw=False)
            self.requests.append(msg)
            rid = msg.get("request_id")
            if msg.get("type") == "ping":
                reply = {"status": "ok", "ok": True, "type": "pong", "request_id": rid}
            elif any("fail" in e["lang"] for e in msg["examples"]):
                reply = {"status": "error", "ok": False, "type": "error", "request_id": rid,
                         "error": {"message": "CUDA out of memory (scripted)"}}
            else:
                batch = np.stack([normalized_for(e) for e in msg["examples"]])
                reply = {"status": "ok", "ok": True, "type": "inference_result", "request_id": rid,
                         "data": {"normalized_actions": batch}}
            await ws.send(msgpack.packb(reply, default=_enc, use_bin_type=True))


@pytest.fixture
def stats_file(tmp_path):
    run = tmp_path / "starvla_run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "dataset_statistics.json").write_text(json.dumps(STATS))
    return run / "checkpoints"


def expected_libero(example, mode="min_max"):
    """StarVLA's client-side post-processing, spelled out independently."""
    a = np.clip(normalized_for(example).astype(np.float64), -1, 1)
    st = STATS["libero_object_no_noops"]["action"]
    lo, hi = (np.array(st["min"]), np.array(st["max"])) if mode == "min_max" else (np.array(st["q01"]), np.array(st["q99"]))
    a[:, 6] = np.where(a[:, 6] < 0.5, 0.0, 1.0)
    out = a.copy()
    out[:, :6] = 0.5 * (a[:, :6] + 1) * (hi[:6] - lo[:6]) + lo[:6]
    out[:, 6] = 1 - 2 * (a[:, 6] > 0.5)  # LIBERO: -1 open, +1 close
    return out


@pytest.mark.parametrize("mode", ["min_max", "q99"])
def test_batch_request_shapes_and_unnormalised_chunks(stats_file, mode):
    with ReferenceStarVLAServer() as server:
        client = RemotePolicy(url=f"ws://127.0.0.1:{server.port}", protocol="starvla", stats_path=str(stats_file),
                              norm_mode=mode, backoff_s=0.05)
        obs = [libero_obs(i, instruction=f"pick up the ketchup {i}") for i in range(3)]
        chunks = client.act([request(o) for o in obs])
        (msg,) = server.requests
        assert len(msg["examples"]) == 3  # one request carries the whole batch
        assert msg["do_sample"] is False and msg["use_ddim"] is True and msg["num_ddim_steps"] == 10
        for o, ex, chunk in zip(obs, msg["examples"], chunks):
            assert ex["lang"] == o["instruction"]
            assert len(ex["image"]) == 2
            assert all(im.shape == (224, 224, 3) and im.dtype == np.uint8 for im in ex["image"])
            assert chunk.shape == (CHUNK, 7)
            np.testing.assert_allclose(chunk, expected_libero(ex, mode), atol=1e-6)
        assert set(chunks[0][:, 6]) <= {-1.0, 1.0}
        ident = client.identity()
        assert ident["unnorm_key"] == "libero_object_no_noops" and identity_of(client.params)["protocol starvla"]["norm_mode"] == mode
        assert client.replan_steps is None  # the runner executes the whole chunk


def test_max_batch_splits_the_examples_list(stats_file):
    with ReferenceStarVLAServer() as server:
        client = RemotePolicy(url=f"ws://127.0.0.1:{server.port}", protocol="starvla", stats_path=str(stats_file),
                              max_batch=2)
        assert len(client.act([request(libero_obs(i)) for i in range(5)])) == 5
        assert [len(m["examples"]) for m in server.requests] == [2, 2, 1]


def test_error_frame_raises_and_keeps_the_connection(stats_file):
    with ReferenceStarVLAServer() as server:
        client = RemotePolicy(url=f"ws://127.0.0.1:{server.port}", protocol="starvla", stats_path=str(stats_file))
        with pytest.raises(RuntimeError, match="CUDA out of memory"):
            client.act([request(libero_obs(0, instruction="fail please"))])
        assert client.act([request(libero_obs(1))])[0].shape == (CHUNK, 7)
        assert server.connections == 1  # error frames do not close a StarVLA connection


def test_identity_follows_the_servers_metadata_and_statistics(stats_file, tmp_path):
    with ReferenceStarVLAServer() as server:
        url = f"ws://127.0.0.1:{server.port}"
        a = RemotePolicy(url=url, protocol="starvla", stats_path=str(stats_file)).identity()
        other = tmp_path / "other.json"
        changed = json.loads(json.dumps(STATS))
        changed["libero_object_no_noops"]["action"]["max"][0] = 0.9
        other.write_text(json.dumps(changed))
        b = RemotePolicy(url=url, protocol="starvla", stats_path=str(other)).identity()
        assert a["server_metadata"] == b["server_metadata"] and a["action_stats"] != b["action_stats"]
