"""Our client against our server, both protocols, over a real loopback socket."""

import json
import socket
import urllib.request

import numpy as np
import pytest

from policies import protocols as P
from policies.remote import PolicyServerUnavailable, RemotePolicy
from policies.server import PolicyServer, PolicyService
from tests.policies.conftest import ScriptedPolicy, expected_chunk, libero_obs, request

STATS = {"min": [-1, -1, -1, -1, -1, -1, 0], "max": [1, 1, 1, 1, 1, 1, 1], "mask": [True] * 6 + [False]}


def _resized(obs):
    return {**obs, "agentview_image": P.resize_with_pad(obs["agentview_image"], 224),
            "wrist_image": P.resize_with_pad(obs["wrist_image"], 224)}


@pytest.fixture
def server(scripted):
    srv = PolicyServer(PolicyService(scripted, stats=P.ActionStats(STATS, "test")), port=0).start_background()
    yield srv
    srv.stop()


def _client(srv, **kw):
    kw.setdefault("backoff_s", 0.05)
    kw.setdefault("connect_retries", 3)
    return RemotePolicy(url=f"ws://127.0.0.1:{srv.port}", **kw)


def test_openpi_batch_returns_each_episodes_chunk(server, scripted):
    client = _client(server)
    obs = [libero_obs(i) for i in range(5)]
    chunks = client.act([request(o, f"t0/{i}") for i, o in enumerate(obs)])
    assert len(chunks) == 5
    for o, c in zip(obs, chunks):
        assert c.shape == (6, 7) and c.dtype == np.float32
        np.testing.assert_allclose(c, expected_chunk(_resized(o)), atol=1e-6)
    assert client.replan_steps == 5  # openpi's LIBERO client
    assert sum(scripted.batches) == 5 and max(scripted.batches) > 1  # pipelined frames share policy calls
    client.close()


def test_openpi_full_resolution_when_resize_off(server):
    client = _client(server, resize=0)
    o = libero_obs(3)
    np.testing.assert_allclose(client.act([request(o)])[0], expected_chunk(o), atol=1e-6)


def test_identity_is_the_servers_metadata_not_the_url(server):
    client = _client(server)
    ident = client.identity()
    json.dumps(ident)  # JSON-able
    assert ident["served"] == {"policy": "scripted", "tag": "v1"}
    assert "127.0.0.1" not in json.dumps(ident) and str(server.port) not in json.dumps(ident["server_metadata"])
    other = PolicyServer(PolicyService(ScriptedPolicy(tag="v2")), port=0).start_background()
    try:
        assert _client(other).identity()["server_metadata"] != ident["server_metadata"]
        same = PolicyServer(PolicyService(ScriptedPolicy(tag="v1"), stats=P.ActionStats(STATS, "test")),
                            port=0).start_background()
        try:  # same policy on another port: same identity
            assert _client(same).identity() == ident
        finally:
            same.stop()
    finally:
        other.stop()


def test_policy_error_raises_with_servers_message_then_reconnects(server):
    client = _client(server)
    with pytest.raises(RuntimeError, match="scripted failure"):
        client.act([request(libero_obs(0, instruction="explode now"))])
    ok = client.act([request(libero_obs(1))])[0]  # the server closed; the client reconnected
    np.testing.assert_allclose(ok, expected_chunk(_resized(libero_obs(1))), atol=1e-6)
    assert server.connections == 2


def test_server_restart_is_survived_and_a_different_checkpoint_is_refused(scripted):
    srv = PolicyServer(PolicyService(scripted), port=0).start_background()
    port = srv.port
    client = _client(srv, connect_retries=5)
    client.act([request(libero_obs(0))])
    srv.stop()
    srv2 = PolicyServer(PolicyService(ScriptedPolicy()), port=port).start_background()
    try:
        assert client.act([request(libero_obs(1))])[0].shape == (6, 7)  # reconnected, same metadata
    finally:
        srv2.stop()
    srv3 = PolicyServer(PolicyService(ScriptedPolicy(tag="another checkpoint")), port=port).start_background()
    try:
        with pytest.raises(RuntimeError, match="different metadata"):
            client.act([request(libero_obs(2))])
    finally:
        srv3.stop()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_server_that_stays_down_raises_connection_error(scripted):
    srv = PolicyServer(PolicyService(scripted), port=0).start_background()
    client = _client(srv, connect_retries=3, backoff_s=0.01)
    srv.stop()
    with pytest.raises(ConnectionError, match="unreachable"):
        client.act([request(libero_obs(0))])
    with pytest.raises(PolicyServerUnavailable, match="unreachable after 2 attempts"):
        RemotePolicy(url=f"ws://127.0.0.1:{_free_port()}", connect_retries=2, backoff_s=0.01)


@pytest.mark.parametrize("send_state", [False, True])
def test_starvla_roundtrip_through_our_server(server, scripted, send_state):
    client = _client(server, protocol="starvla", send_state=send_state)
    assert client.replan_steps is None  # whole chunk
    obs = [libero_obs(i) for i in range(4)]
    chunks = client.act([request(o) for o in obs])
    assert scripted.batches == [4]  # one examples list -> one policy call
    for o, c in zip(obs, chunks):
        small = {**o, "agentview_image": P.resize_area(o["agentview_image"], 224)[0],
                 "wrist_image": P.resize_area(o["wrist_image"], 224)[0],
                 "state": o["state"] if send_state else np.zeros(8, np.float32)}  # StarVLA sends no state by default
        np.testing.assert_allclose(c, expected_chunk(small), atol=1e-6)  # normalise -> un-normalise = identity
    assert client.identity()["action_stats"] == P.ActionStats(STATS).digest()


def test_starvla_client_needs_statistics(scripted):
    srv = PolicyServer(PolicyService(scripted), port=0).start_background()
    try:
        with pytest.raises(ValueError, match="stats_path"):
            _client(srv, protocol="starvla")
    finally:
        srv.stop()


def test_healthz(server):
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=5) as resp:
        assert resp.status == 200 and resp.read() == b"OK\n"


def test_server_batches_requests_from_several_connections(scripted):
    import threading
    import time

    slow = ScriptedPolicy()
    original = slow.act

    def act(reqs):
        time.sleep(0.2)
        return original(reqs)

    slow.act = act
    srv = PolicyServer(PolicyService(slow), port=0).start_background()
    try:
        clients = [_client(srv) for _ in range(4)]
        results = {}
        threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, clients[i].act([request(libero_obs(i))])))
                   for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert len(results) == 4 and sum(slow.batches) == 4
        assert max(slow.batches) > 1  # requests from different connections shared a policy call
    finally:
        srv.stop()


def test_any_registered_policy_is_served(scripted):
    """serve-policy builds policies from the registry: the zero policy, over both protocols."""
    from harness.registry.catalog import POLICIES

    agent = POLICIES.build("zero")
    srv = PolicyServer(PolicyService(agent, stats=P.ActionStats(STATS, "test")), port=0).start_background()
    try:
        dummy = np.array(P.LIBERO_DUMMY_ACTION, np.float32)
        for protocol in ("openpi", "starvla"):
            client = _client(srv, protocol=protocol)
            assert client.identity()["served"] == json.loads(json.dumps(agent.identity()))
            (chunk,) = client.act([request(libero_obs(0))])
            assert chunk.ndim == 2 and (chunk == dummy).all()
    finally:
        srv.stop()


def test_bad_frame_gets_text_and_close(server):
    from websockets.sync.client import connect

    with connect(f"ws://127.0.0.1:{server.port}") as ws:
        ws.recv(timeout=5)  # metadata
        ws.send(b"\xc1not msgpack")
        reply = ws.recv(timeout=5)
        assert isinstance(reply, str) and "bad frame" in reply
        with pytest.raises(Exception):
            ws.recv(timeout=5)  # closed by the server


def test_reply_timeout_reconnects_then_gives_up(scripted):
    import time

    slow = ScriptedPolicy()
    original = slow.act
    slow.act = lambda reqs: (time.sleep(1.0), original(reqs))[1]
    srv = PolicyServer(PolicyService(slow), port=0).start_background()
    try:
        client = _client(srv, timeout_s=0.2, connect_retries=2)
        with pytest.raises(ConnectionError, match="no reply after 2 attempts"):
            client.act([request(libero_obs(0))])
    finally:
        srv.stop()
