"""serve-policy under many clients: idle connections time out, an idle one makes room for a
new client at max_connections (503 only when every connection is busy), and the frame bytes
received and not yet answered stay under max_inflight over all connections."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from policies.server import PolicyServer, PolicyService
from tests.policies.conftest import ScriptedPolicy, expected_chunk, libero_obs, request
from tests.policies.test_remote_server import _client, _resized


def test_an_idle_connection_is_closed():
    srv = PolicyServer(PolicyService(ScriptedPolicy()), port=0, idle_timeout_s=0.5).start_background()
    try:
        with connect(f"ws://127.0.0.1:{srv.port}") as ws:
            ws.recv()  # metadata
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        # a client that keeps asking is not idle
        client = _client(srv)
        for i in range(3):
            (chunk,) = client.act([request(libero_obs(i))])
            np.testing.assert_allclose(chunk, expected_chunk(_resized(libero_obs(i))), rtol=1e-6)
            time.sleep(0.3)
        client.close()
    finally:
        srv.stop()


def test_idle_clients_make_room_for_a_new_one():
    srv = PolicyServer(PolicyService(ScriptedPolicy()), port=0, max_connections=2,
                       evict_idle_s=0.3).start_background()
    url = f"ws://127.0.0.1:{srv.port}"
    try:
        with connect(url) as a, connect(url) as b:
            a.recv(), b.recv()
            time.sleep(0.5)  # both idle past evict_idle_s
            with connect(url, open_timeout=5) as c:
                assert c.recv()
                codes = []
                for ws in (a, b):
                    try:
                        ws.recv(timeout=1)
                    except ConnectionClosed as exc:
                        codes.append(exc.rcvd.code if exc.rcvd else None)
                    except TimeoutError:
                        pass
                assert codes == [1013]  # the one idle longest made room; the other is still served
    finally:
        srv.stop()


def test_frame_bytes_in_flight_stay_under_the_cap():
    slow = ScriptedPolicy()
    original = slow.act

    def act(reqs):
        time.sleep(0.2)
        return original(reqs)

    slow.act = act
    cap = 600_000  # about two LIBERO frames (two 224x224 images each)
    srv = PolicyServer(PolicyService(slow), port=0, max_inflight=cap).start_background()
    try:
        clients = [_client(srv) for _ in range(6)]
        results: dict[int, np.ndarray] = {}
        threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, clients[i].act([request(libero_obs(i))])[0]))
                   for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert sorted(results) == list(range(6))
        for i, chunk in results.items():
            np.testing.assert_allclose(chunk, expected_chunk(_resized(libero_obs(i))), rtol=1e-6)
        assert 0 < srv.peak_inflight_bytes <= cap, srv.peak_inflight_bytes
        assert srv.inflight_bytes == 0
        for c in clients:
            c.close()
    finally:
        srv.stop()
