"""harness/run/servers.py: an experiment's per-variant policy servers (fast: real processes, plain sockets)."""

from __future__ import annotations

import socket
import sys
import time

import pytest

from harness.tables import experiments
from harness.run import servers
from tests.helpers import process_group_alive

LISTEN = (f"{sys.executable} -c \"import socket, sys, time; s = socket.socket(); "
          "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); print('up', sys.argv[2], flush=True); "
          "time.sleep(120)\" {port} {checkpoint}")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(port: int) -> bool:
    return servers._answers("127.0.0.1", port, timeout=0.5)


def test_placeholders_fill_overrides_with_the_checkpoints_digest(tmp_path):
    from harness.util.checkpoint_identity import path_digest

    ckpt = tmp_path / "my ckpt"
    ckpt.mkdir()
    (ckpt / "weights.safetensors").write_bytes(b"\0" * 64)
    serve = servers.VariantServe(url="ws://127.0.0.1:10093", checkpoint=str(ckpt))
    vals = servers.values("base", serve)
    assert vals["checkpoint_id"] == f"my_ckpt@sha256:{path_digest(ckpt)}" and vals["port"] == "10093"
    filled = servers.fill(["policy.params.url={url}", "policy.params.checkpoint_id={checkpoint_id}"], vals)
    assert filled == ["policy.params.url=ws://127.0.0.1:10093", f"policy.params.checkpoint_id={vals['checkpoint_id']}"]
    (command,) = servers.fill(["serve --ckpt {checkpoint}"], vals, quote=True)
    assert command == f"serve --ckpt '{ckpt.resolve()}'"
    # another checkpoint, another id
    (ckpt / "weights.safetensors").write_bytes(b"\1" * 64)
    servers.checkpoint_digest.cache_clear()
    assert servers.values("base", serve)["checkpoint_id"] != vals["checkpoint_id"]
    unset = servers.values("base", servers.VariantServe(url="ws://127.0.0.1:1", checkpoint="${oc.env:NO_SUCH_VAR_X,null}"))
    assert unset["checkpoint_id"] == "null"
    with pytest.raises(servers.ServeError, match="does not exist"):
        servers.values("base", servers.VariantServe(checkpoint=str(tmp_path / "missing")))


def test_one_variant_at_a_time_and_stopped(tmp_path):
    ports = {"a": _port(), "b": _port()}
    variants = {}
    for name, port in ports.items():
        (tmp_path / name).mkdir()
        variants[name] = servers.VariantServe(url=f"ws://127.0.0.1:{port}", checkpoint=str(tmp_path / name))
    life = servers.Lifecycle(servers.ServeSettings(LISTEN, ready_timeout_s=30, stop_timeout_s=5), variants)
    with life:
        life.enter("a", tmp_path / "out")
        assert _answers(ports["a"]) and not _answers(ports["b"])
        pid_a = life.proc.pid
        life.enter("a", tmp_path / "out")  # the same variant: the same server
        assert life.proc.pid == pid_a
        life.enter("b", tmp_path / "out")
        assert _answers(ports["b"]) and not _answers(ports["a"])
    assert not _answers(ports["b"]) and life.proc is None
    log = (tmp_path / "out" / "servers" / "b.log").read_text()
    assert f"up {tmp_path / 'b'}" in log
    assert (tmp_path / "out" / "servers" / "a.json").is_file()


def test_a_busy_port_and_a_dying_server_are_one_line_errors(tmp_path):
    port = _port()
    (tmp_path / "c").mkdir()
    variant = {"c": servers.VariantServe(url=f"ws://127.0.0.1:{port}", checkpoint=str(tmp_path / "c"))}
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port))
        busy.listen()
        life = servers.Lifecycle(servers.ServeSettings(LISTEN, ready_timeout_s=30), variant)
        with pytest.raises(servers.ServeError, match="already answers"):
            life.enter("c", tmp_path / "out")
        assert life.proc is None
    # Its exit is noticed at once, not at the end of a readiness wait longer than any load makes
    # a Python start-up (the message would then be the timeout's, not the exit's).
    dying = servers.Lifecycle(servers.ServeSettings(f"{sys.executable} -c \"raise SystemExit('no GPU here')\"",
                                                    ready_timeout_s=300), variant)
    t0 = time.monotonic()
    with pytest.raises(servers.ServeError, match="exited with status 1 before answering.*no GPU here") as info:
        dying.enter("c", tmp_path / "out")
    assert "\n" not in str(info.value) and time.monotonic() - t0 < 150
    silent = servers.Lifecycle(servers.ServeSettings(f"{sys.executable} -c \"import time; time.sleep(60)\"",
                                                     ready_timeout_s=1, stop_timeout_s=5), variant)
    with pytest.raises(servers.ServeError, match="did not answer .* within 1 s"):
        silent.enter("c", tmp_path / "out")
    assert silent.proc is None


def test_the_experiment_file_declares_a_served_route_per_variant(monkeypatch, tmp_path):
    exp = experiments.load("libero_four_suites")
    assert [v.name for v in exp.variants] == ["base", "favor_sft", "cfg_sft"]
    assert servers.Lifecycle.for_experiment(exp) is None  # no $VLA_SERVE_COMMAND: the user's servers
    jobs = exp.jobs()
    assert "policy.params.protocol=starvla" in jobs[0] and "policy.params.url=ws://127.0.0.1:10093" in jobs[0]
    monkeypatch.setenv("VLA_SERVE_COMMAND", "serve {checkpoint} {port}")
    assert servers.Lifecycle.for_experiment(experiments.load("libero_four_suites")) is not None
    with pytest.raises(experiments.ExperimentError, match="serve takes"):
        experiments.load("libero_four_suites", ["experiment.variants.base.serve.colour=blue"])


HOLDER = """
import sys, time
from pathlib import Path
from harness.run import servers
port, root = int(sys.argv[1]), Path(sys.argv[2])
variant = {"a": servers.VariantServe(url=f"ws://127.0.0.1:{port}", checkpoint=str(root / "a"))}
life = servers.Lifecycle(servers.ServeSettings(sys.argv[3], ready_timeout_s=30, stop_timeout_s=3), variant)
life.enter("a", root / "out")
print(life.proc.pid, flush=True)
time.sleep(300)
"""


def test_a_server_dies_with_the_harness_that_started_it(tmp_path):
    """SIGKILL of the harness (no cleanup runs): the server's watchdog sees the harness's pipe
    close and stops the server's process group; its port is free again."""
    import os
    import signal
    import subprocess
    from pathlib import Path

    port = _port()
    (tmp_path / "a").mkdir()
    repo = Path(__file__).resolve().parents[3]
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(port), str(tmp_path), LISTEN],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(repo)})
    pgid = None
    try:
        pgid = int(holder.stdout.readline())
        assert _answers(port) and process_group_alive(pgid)
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        deadline = time.monotonic() + 20
        while (_answers(port) or process_group_alive(pgid)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _answers(port) and not process_group_alive(pgid), "the server outlived the harness"
        assert "the harness that started this server is gone" in (tmp_path / "out" / "servers" / "a.log").read_text()
    finally:
        if holder.poll() is None:
            holder.kill()
        if pgid is not None and process_group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)


def test_a_rerun_names_the_stale_server_it_recorded(tmp_path):
    """A server left on the port by an earlier run (recorded in OUT/servers/): the refusal names
    its pid and record, so the user knows what to stop."""
    import json
    import os
    import signal
    import subprocess

    port = _port()
    (tmp_path / "a").mkdir()
    (stale_cmd,) = servers.fill([LISTEN], {**servers.values("a", None), "port": str(port), "checkpoint": "x"})
    old = subprocess.Popen(stale_cmd, shell=True, start_new_session=True, stdout=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not _answers(port):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        folder = tmp_path / "out" / "servers"
        folder.mkdir(parents=True)
        (folder / "a.json").write_text(json.dumps({"variant": "a", "url": f"ws://127.0.0.1:{port}", "pid": old.pid}))
        variant = {"a": servers.VariantServe(url=f"ws://127.0.0.1:{port}", checkpoint=str(tmp_path / "a"))}
        life = servers.Lifecycle(servers.ServeSettings(LISTEN, ready_timeout_s=30), variant)
        with pytest.raises(servers.ServeError) as err:
            life.enter("a", tmp_path / "out")
        assert f"pid {old.pid}" in str(err.value) and str(folder / "a.json") in str(err.value)
        assert f"kill -- -{old.pid}" in str(err.value) and "\n" not in str(err.value)
    finally:
        os.killpg(old.pid, signal.SIGKILL)
        old.wait()


def test_served_checkpoint_digest_is_the_one_run_ids_were_made_with(tmp_path):
    """A served checkpoint's id keeps the digest earlier runs stored (computed by the hasher the
    policies package had before the core took it over), so their runs still resume."""
    ckpt = tmp_path / "ck"
    (ckpt / "sub").mkdir(parents=True)
    (ckpt / "config.json").write_text('{"hidden_size": 8}')
    (ckpt / "sub" / "w.bin").write_bytes(bytes(range(256)) * 10)
    assert servers.checkpoint_digest(str(ckpt)) == "4719c77a0a190cab"
    assert servers.checkpoint_digest(str(ckpt / "config.json")) == "1bac400e15ed4b4b"
