"""The policies' declarations (policies/plugin.py): what each constructor accepts,
its defaults, and that identity() holds derived facts only."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from harness.registry.catalog import POLICIES
from harness.params import ParamError, identity_of, parse
from policies import plugin
from policies import protocols as P

REPO = Path(__file__).resolve().parents[2]

def test_listing_needs_no_numpy():
    """The declarations module is imported by `harness list`: nothing heavy."""
    code = "import sys, policies.plugin; sys.exit('numpy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0
    assert plugin.PROTOCOLS == P.PROTOCOLS and plugin.NORM_MODES == P.NORM_MODES
    assert plugin.STARVLA_REPLY_FORMS == P.STARVLA_REPLY_FORMS


def test_serve_defaults_are_the_servers():
    from policies import server

    s = plugin.ServeParams()
    assert (s.host, s.port) == (server.LOOPBACK, server.DEFAULT_PORT)
    assert (s.max_connections, s.max_frame_mb * 2**20) == (server.DEFAULT_MAX_CONNECTIONS, server.DEFAULT_MAX_FRAME)
    assert (s.idle_timeout_s, s.max_inflight_mb * 2**20) == (server.DEFAULT_IDLE_TIMEOUT_S, server.DEFAULT_MAX_INFLIGHT)
    service = inspect.signature(server.PolicyService).parameters
    assert (s.max_batch, s.max_wait_s, s.norm_mode) == (service["max_batch"].default, service["max_wait_s"].default,
                                                        service["norm_mode"].default)


@pytest.mark.parametrize("name, values, message", [
    ("zero", {"bogus": 1}, "bogus is not a parameter"),  # no longer swallowed by **_
    ("zero", {"chunk": 0}, "chunk must be a whole number >= 1"),
    ("zero", {"action": [0.0] * 6}, "action must be a list of 7 numbers"),
    ("zero", {"action": [0.0] * 6 + [float("nan")]}, "action must be a list"),
    ("replay", {}, "path is required"),
    ("replay", {"path": ".", "after": "maybe"}, "after must be one of 'hold', 'stop'"),
    ("remote", {"protocol": "nope"}, "protocol must be one of 'openpi', 'starvla'"),
    ("remote", {"url": "notaurl"}, "url must be a ws:// or wss:// URL"),
    ("remote", {"url": "http://127.0.0.1:8000"}, "url must be a ws:// or wss:// URL"),
    ("remote", {"timeout_s": float("nan")}, "timeout_s must be a finite number > 0"),
    ("remote", {"connect_retries": 0}, "connect_retries must be a whole number >= 1"),
    ("remote", {"norm_mode": "q99"}, "norm_mode is a parameter of protocol starvla"),  # openpi would ignore it
    ("remote", {"protocol": "starvla", "stats_path": "/nonexistent"}, "stats_path must be an existing file"),
    ("remote", {"protocol": "starvla", "send_state": "maybe"}, "send_state must be true or false"),
    ("vla", {}, "checkpoint is required"),
    ("vla", {"checkpoint": ".", "dtype": "nope"}, "dtype must be one of"),
    ("vla", {"checkpoint": ".", "device": "gpu"}, "device must be a torch device"),
    ("lerobot", {"policy": "x", "replan_steps": 0}, "replan_steps must be a whole number >= 1"),
])
def test_bad_values_are_refused_in_one_line(name, values, message):
    with pytest.raises(ParamError) as err:
        POLICIES.build(name, **values)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("values, message", [
    ({"max_batch": 0}, "max_batch must be a whole number >= 1"),  # a server that never answers
    ({"port": 65536}, "port must be between 0 and 65535"),
    ({"max_wait_s": -1}, "max_wait_s must be a finite number >= 0"),
])
def test_serve_settings_are_checked(values, message):
    with pytest.raises(ParamError, match=message):
        parse(plugin.ServeParams, values)


def test_a_url_without_scheme_is_a_ws_url():
    parsed = parse(POLICIES.entry("remote").params, {"url": "localhost:8000"})
    assert parsed.url == "ws://localhost:8000"
    assert parse(POLICIES.entry("remote").params, {"url": "wss://example.org/policy"}).url == "wss://example.org/policy"


def test_openpi_accepts_starvla_settings_left_at_their_defaults():
    """A composed config lists every key: null or default StarVLA settings are no settings."""
    parsed = parse(POLICIES.entry("remote").params, {"protocol": "openpi", "stats_path": None,
                                                      "norm_mode": "min_max", "send_state": False})
    assert list(parsed) == ["remote"]


def test_quoted_false_is_false():
    parsed = parse(POLICIES.entry("remote").params, {"protocol": "starvla", "send_state": "false"})
    assert parsed.send_state is False


def test_refused_remote_construction_leaves_no_noise():
    code = ("from policies.remote import RemotePolicy\n"
            "try:\n    RemotePolicy(protocol='nope')\nexcept ValueError:\n    pass\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0 and run.stderr == "", run.stderr


def test_identity_names_no_parameter(tmp_path):
    """zero and replay: the declared fields are hashed from ``params``; identity() holds the
    name and the demo files' hashes only."""
    import numpy as np

    zero = POLICIES.build("zero", chunk=3)
    assert zero.identity() == {"name": "zero"} and identity_of(zero.params) == {"action": None}
    np.savez(tmp_path / "d.npz", actions=np.zeros((3, 7)))
    replay = POLICIES.build("replay", path=str(tmp_path / "d.npz"), demo="init_index", after="stop")
    assert set(replay.identity()) == {"name", "files"}
    assert identity_of(replay.params) == {"demo": "init_index", "after": "stop"}
    moved = tmp_path / "moved"
    moved.mkdir()
    (tmp_path / "d.npz").rename(moved / "d.npz")
    again = POLICIES.build("replay", path=str(moved / "d.npz"), demo="init_index", after="stop")
    assert (again.identity(), identity_of(again.params)) == (replay.identity(), identity_of(replay.params))
