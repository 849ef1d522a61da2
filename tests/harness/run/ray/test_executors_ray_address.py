"""``executor.address=...`` from the real CLI: a Ray cluster started here (a head
node on this machine with token authentication and a Ray client server) is
joined as ``HOST:PORT``, ``auto`` and ``ray://HOST:PORT``; an unreachable or
malformed address and a wrong token are refused in one line with exit 2,
before any store or run exists."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="executor=ray needs the ray extra: pip install -e '.[ray]'")

from harness.store import ResultStore  # noqa: E402

# serial: Ray clusters of their own (and ports picked free, then bound by another process)
pytestmark = pytest.mark.serial

REPO = Path(__file__).resolve().parents[4]
ARGS = ["run", "planner=random", "split=seen", "limit=3", "suite.params.generated_per_split=40",
        "suite.params.render=false", "executor=ray", "executor.num_workers=1", "progress=false"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli(out: Path, address: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run([sys.executable, "-m", "harness.cli", *ARGS, f"executor.address={address}", f"out={out}"],
                          cwd=REPO, env={**base, "PYTHONPATH": str(REPO), **env}, capture_output=True, text=True,
                          timeout=300)


def _harness_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("harness:")]


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("via", ["record", "RAY_ADDRESS"])
def test_auto_with_a_stopped_clusters_address_is_refused_in_one_line(tmp_path, via):
    """``auto`` joins what Ray finds: RAY_ADDRESS, else the address the last ``ray start`` wrote
    to ``$RAY_TMPDIR/ray/ray_current_cluster``. Left by a cluster since stopped, Ray would retry it
    for ever; the harness refuses it at once. (Placed before the tests that start a head node:
    ``auto`` prefers a running cluster to the record.)"""
    from ray._private.services import find_gcs_addresses

    if via == "record" and find_gcs_addresses():  # Ray's auto joins a running cluster before the record
        pytest.skip("a Ray cluster runs on this machine: auto would join it, not the recorded address")
    closed = f"127.0.0.1:{_free_port()}"
    ray_tmp = tmp_path / "ray_tmp"
    (ray_tmp / "ray").mkdir(parents=True)
    env = {"RAY_TMPDIR": str(ray_tmp)}
    if via == "record":
        (ray_tmp / "ray" / "ray_current_cluster").write_text(closed)
    else:
        env["RAY_ADDRESS"] = closed
    out = tmp_path / "out"
    proc = _cli(out, "auto", **env)
    _assert_refused(proc, out, f"cannot reach Ray at {closed}", "a cluster since stopped?")


#: Runs in its own process (Ray reads RAY_AUTH_MODE once per process): starts a head node,
#: prints its address, shuts it down when its stdin closes.
HEAD = """
import sys
from ray.cluster_utils import Cluster
cluster = Cluster(initialize_head=True, head_node_args={
    "num_cpus": 2, "include_dashboard": False, "ray_client_server_port": int(sys.argv[1])})
print(cluster.address, flush=True)
sys.stdin.read()
cluster.shutdown()
"""


@pytest.fixture(scope="module")
def head():
    """A head node with token authentication (the token: Ray's default file, made if absent)."""
    env = {**os.environ, "RAY_AUTH_MODE": "token", "PYTHONPATH": str(REPO)}
    env.pop("RAY_ADDRESS", None)
    subprocess.run([sys.executable, "-m", "ray.scripts.scripts", "get-auth-token", "--generate"], env=env,
                   capture_output=True, timeout=60)
    client_port = _free_port()
    proc = subprocess.Popen([sys.executable, "-c", HEAD, str(client_port)], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        address = proc.stdout.readline().strip()
        assert address, "the head node did not start"
        yield address, client_port
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["host:port", "auto", "ray://"])
def test_joins_a_running_cluster(head, tmp_path, kind):
    gcs, client_port = head
    address = {"host:port": gcs, "auto": "auto", "ray://": f"ray://127.0.0.1:{client_port}"}[kind]
    env = {"RAY_AUTH_MODE": "token"}
    if kind == "auto":
        env["RAY_ADDRESS"] = gcs  # auto resolves RAY_ADDRESS first: this cluster, not another on the machine
    proc = _cli(tmp_path, address, **env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with ResultStore(tmp_path, readonly=True) as store:
        records = store.records()
    assert len(records) == 3 and all(r.error_kind is None for r in records)


def _assert_refused(proc: subprocess.CompletedProcess, out: Path, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = _harness_lines(proc.stderr)
    assert len(lines) == 1 and all(w in lines[0] for w in words), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert not (out / "results.sqlite").exists()  # refused before the store, so no (empty) run either


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("address, words", [
    ("127.0.0.1:{closed}", ("cannot reach Ray at 127.0.0.1:",)),
    ("ray://127.0.0.1:{closed}", ("cannot reach Ray at ray://127.0.0.1:",)),
    ("a-cluster", ("executor.address must be auto, HOST:PORT or ray://HOST:PORT",)),
])
def test_unreachable_or_malformed_address_is_refused_in_one_line(tmp_path, address, words):
    proc = _cli(tmp_path, address.format(closed=_free_port()))
    _assert_refused(proc, tmp_path, *words)


@pytest.mark.slow
def test_wrong_token_is_refused_in_one_line(head, tmp_path):
    proc = _cli(tmp_path, head[0], RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="not-the-cluster-token")
    _assert_refused(proc, tmp_path, "authentication failed", "RAY_AUTH_TOKEN")

