"""Hostile model servers on loopback: every network call ends within its wall-clock bound, a
stop signal ends `harness judge` within seconds saying truthfully what was saved, and no
secret the server echoes (an API key, the password of a ``base_url``, the Basic auth header
derived from it) reaches any file the harness writes.

The servers are built here from raw sockets: one drips a byte every 0.2 s before its headers
end or after them (each socket read returns at once, so a per-read timeout never fires), one
holds requests without answering; every loop is bounded."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from tests.harness import judge_fixtures as fx
from tests.harness.run.test_reliability import FAST
from tests.harness.run.test_reliability import harness as harness_proc
from tests.helpers import chat_completion, committed_rows

pytest.importorskip("openai", reason="the openai backend needs the `models` extra")

REPO = Path(__file__).resolve().parents[3]
KEY = "sk-hostile-5b9e0c7d21fa4e"
PASSWORD = "pw-in-the-url-8c1d"
#: The most bytes a dripping server sends (at 0.2 s a byte: 60 s), then it hangs up.
DRIP_BYTES = 300


def _read_request(sock: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return b"", b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head, body


@contextmanager
def serving(server: socketserver.BaseServer) -> Iterator[int]:
    """``server`` answering on a daemon thread (its handler threads daemons too) while the block
    runs; yields its port."""
    server.daemon_threads = True  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def hostile_server(mode: str, *, answer_first: int = 0) -> Iterator[str]:
    """A loopback server: ``drip_head`` (a byte every 0.2 s, the headers never end in time),
    ``drip_body`` (whole headers, then the body a byte every 0.2 s), ``hang`` (reads the request,
    answers nothing for up to 60 s). The first ``answer_first`` chat requests get a judge
    verdict at once (judge_fixtures' scoring); ``GET`` requests are handled like chats."""
    count = [0]
    lock = threading.Lock()
    stop = threading.Event()

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            sock = self.request
            sock.settimeout(10)
            try:
                head, body = _read_request(sock)
                if not head:
                    return
                with lock:
                    count[0] += head.startswith(b"POST")
                    n = count[0]
                if head.startswith(b"POST") and n <= answer_first:
                    req = json.loads(body)
                    answer = req["messages"][-1]["content"].rpartition("ANSWER: ")[2]
                    data = json.dumps(chat_completion(req["model"], fx.judge_reply(req["model"], answer))).encode()
                    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
                    return
                reply = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
                         + b" " * 100000)
                if mode == "hang":
                    stop.wait(60)
                    return
                if mode == "drip_body":
                    cut = reply.index(b"\r\n\r\n") + 4
                    sock.sendall(reply[:cut])
                    reply = reply[cut:]
                for i in range(DRIP_BYTES):
                    if stop.is_set():
                        return
                    sock.sendall(reply[i:i + 1])
                    time.sleep(0.2)
            except OSError:
                return

    with serving(socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)) as port:
        try:
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            stop.set()


@pytest.fixture(autouse=True)
def _registered_only_here():
    with fx.registered_only_here():
        yield


cli = fx.cli


@pytest.mark.parametrize("mode", ["drip_head", "drip_body", "hang"])
def test_the_openai_backend_ends_each_call_by_its_wall_clock_limit(monkeypatch, mode):
    from planners.vlm import backends
    from planners.vlm.wallclock import CallTimedOut

    monkeypatch.setattr(backends, "SERVED_MODEL_TIMEOUT_S", 1.0)
    with hostile_server(mode) as url:
        start = time.monotonic()
        backend = backends.OpenAIBackend("m", base_url=url, request_timeout_s=2.0, max_retries=0)
        assert time.monotonic() - start < 5  # the model listing (run identity): 1 s, not the drip
        assert backend.identity()["served_model"] is None
        start = time.monotonic()
        with pytest.raises(CallTimedOut, match="request_timeout_s=2 s of wall clock"):
            backend.generate([[{"role": "user", "content": "hi"}]])
        assert time.monotonic() - start < 4.5  # 2 s, and nothing near the 60 s of the drip
        backend.close()


def test_close_ends_the_calls_in_flight_at_once():
    from planners.vlm.backends import OpenAIBackend
    from planners.vlm.wallclock import CallTimedOut

    with hostile_server("hang") as url:
        backend = OpenAIBackend("m", base_url=url, request_timeout_s=100.0, max_retries=0)
        errors: list[BaseException] = []

        def call() -> None:
            try:
                backend.generate([[{"role": "user", "content": "hi"}]])
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        thread = threading.Thread(target=call)
        thread.start()
        time.sleep(1.0)
        start = time.monotonic()
        backend.close()
        thread.join(10)
        assert not thread.is_alive() and time.monotonic() - start < 3
        assert errors and isinstance(errors[0], CallTimedOut) and "aborted" in str(errors[0])


def _answers(tmp_path: Path, questions: int = 6) -> Path:
    out = tmp_path / "out"
    assert cli("run", f"suite={fx.SUITE_NAME}", "planner=answerer", "executor=local", f"out={out}",
               "progress=false", f"suite.params.questions={questions}") == 0
    return out


def _judgements(out: Path) -> list[tuple]:
    import sqlite3

    db = sqlite3.connect(out / "results.sqlite")
    try:
        return db.execute("SELECT episode_id, status, reason, raw_reply FROM judgements ORDER BY episode_id").fetchall()
    finally:
        db.close()


@pytest.mark.parametrize("mode", ["drip_head", "drip_body"])
def test_a_dripping_judge_server_gives_failed_verdicts_within_request_timeout_s(tmp_path, monkeypatch, mode):
    from planners.vlm import backends

    monkeypatch.setattr(backends, "SERVED_MODEL_TIMEOUT_S", 1.0)
    out = _answers(tmp_path)
    with hostile_server(mode) as url:
        start = time.monotonic()
        status = cli("judge", str(out), "judge=openai", "judge.model=judge-a", f"judge.params.base_url={url}",
                     "judge.params.request_timeout_s=1.5", "judge.params.max_retries=0",
                     "judge.params.max_concurrency=6")
        elapsed = time.monotonic() - start
    assert status == 1  # error verdicts
    assert elapsed < 12, elapsed  # 1 s listing + 1.5 s per call (6 at once), not the 60 s drip
    rows = _judgements(out)
    assert len(rows) == 6 and {r[1] for r in rows} == {"error"}
    assert all("request_timeout_s=1.5 s of wall clock" in r[2] for r in rows), rows[0][2]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_ends_judge_at_once_and_counts_what_was_saved(tmp_path, sig):
    out = _answers(tmp_path, questions=16)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with hostile_server("hang", answer_first=5) as url:
        cmd = [sys.executable, "-m", "tests.harness.judge_fixtures", "cli", "judge", str(out), "judge=openai",
               "judge.model=judge-a", f"judge.params.base_url={url}", "judge.params.max_concurrency=3",
               "judge.params.request_timeout_s=300"]
        # default signal dispositions, as from a terminal: a job started in the background (CI)
        # inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            deadline = time.monotonic() + 60
            while committed_rows(out / "results.sqlite", "judgements") < 5:  # then 3 calls hang
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
            time.sleep(0.5)
            start = time.monotonic()
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=30)
            elapsed = time.monotonic() - start
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    saved = committed_rows(out / "results.sqlite", "judgements")
    assert proc.returncode == 128 + sig, err
    assert elapsed < 6, elapsed  # not the 300 s of a held call
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"harness: stopped by {signal.Signals(sig).name}; "), err
    assert f"{saved} verdict(s) judged in this invocation are saved" in last, (saved, last)
    assert "nothing was written" not in err and saved == 5


@contextmanager
def echoing_judge(statuses: dict[int, int]) -> Iterator[str]:
    """A judge server that repeats the credentials it got: request n (from 1) gets the status
    ``statuses.get(n, 200)``; an error's body and a verdict's text both name the key and the
    Authorization header it received."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    count = [0]
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self._reply(200, {"object": "list", "data": [{"id": "judge-a", "root": self.headers.get("Authorization")}]})

        def do_POST(self):
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            with lock:
                count[0] += 1
                n = count[0]
            got = self.headers.get("Authorization", "")
            status = statuses.get(n, 200)
            if status != 200:
                self._reply(status, {"error": {"message": f"Incorrect API key provided: {got}; key {KEY}",
                                               "type": "invalid_request_error"}})
                return
            content = req["messages"][-1]["content"]
            if isinstance(content, list):  # a planner's prompt: text and image parts
                content = " ".join(p.get("text", "") for p in content)
            text = f"You sent {got} and {KEY}.\n" + fx.judge_reply(req["model"], content.rpartition("ANSWER: ")[2])
            self._reply(200, chat_completion(req["model"], text))

        def _reply(self, status, payload):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as port:
        yield f"127.0.0.1:{port}/v1"


def test_judge_stores_no_echoed_key_nor_url_password(tmp_path):
    """The judge's rows (reason, raw reply), the report and the export carry neither the key the
    server repeats in 401 / 500 bodies and in verdicts, nor the base_url's password, plain or as
    the base64 Basic auth value the client derived from it."""
    out = _answers(tmp_path)
    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    env = {**os.environ, "PYTHONPATH": str(REPO), "MY_JUDGE_KEY": KEY}
    with echoing_judge({1: 401, 2: 500}) as where:
        url = f"http://alice:{PASSWORD}@{where}"
        judge = subprocess.run(
            [sys.executable, "-m", "tests.harness.judge_fixtures", "cli", "judge", str(out), "judge=openai",
             "judge.model=judge-a", f"judge.params.base_url={url}", "judge.params.api_key_env=MY_JUDGE_KEY",
             "judge.params.max_retries=0", "judge.params.max_concurrency=1", "judge.record_prompts=true"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert judge.returncode == 1, judge.stderr  # two error verdicts
    rows = _judgements(out)
    errors = [r for r in rows if r[1] == "error"]
    assert len(errors) == 2 and all("Incorrect API key provided: Basic ***; key ***" in r[2] for r in errors), errors
    assert any("You sent Basic *** and ***." in (r[3] or "") for r in rows), rows  # the verdicts' raw replies
    written = []
    for args in (["report", str(out), "--judge", "judge-a"], ["export", str(out), "-o", str(tmp_path / "e.jsonl"),
                                                              "--judge", "judge-a"]):
        res = subprocess.run([sys.executable, "-m", "tests.harness.judge_fixtures", "cli", *args], cwd=REPO,
                             env=env, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        written.append(res.stdout + res.stderr)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".html" for p in files) and (tmp_path / "e.jsonl").is_file()
    for secret in (KEY, PASSWORD, basic, basic.rstrip("=")):
        assert secret not in judge.stdout + judge.stderr + "".join(written), secret
        for path in files:
            assert secret.encode() not in path.read_bytes(), (secret, path)


def test_a_dripping_model_server_gives_timeout_records_under_harness_run(tmp_path):
    with hostile_server("drip_head") as url:
        start = time.monotonic()
        run = harness_proc("run", "planner=vlm", "planner.params.backend=openai", "planner.params.model=m",
                           f"planner.params.base_url={url}", "planner.params.max_retries=0",
                           "planner.params.request_timeout_s=2", "split=seen", "limit=2", *FAST, "out=o",
                           cwd=tmp_path, timeout=120)
        elapsed = time.monotonic() - start
    assert run.returncode == 0, run.stderr
    assert elapsed < 60, elapsed  # 10 s model listing + 2 s per call, not the 60 s per request of the drip
    export = harness_proc("export", "o", cwd=tmp_path)
    rows = [json.loads(line) for line in export.stdout.splitlines()]
    assert len(rows) == 2 and {r["error_kind"] for r in rows} == {"timeout"}, rows
    assert all("request_timeout_s=2 s of wall clock" in r["error_message"] for r in rows)


# --- other clients: the wall-clock HTTP exchange, the policy clients ----------------------
@pytest.mark.parametrize("mode", ["drip_head", "drip_body", "hang"])
def test_fetch_ends_the_whole_exchange_by_its_wall_clock_limit(mode):
    from harness.util.wallclock import WallClockTimeout, fetch

    with hostile_server(mode) as url:
        start = time.monotonic()
        with pytest.raises(WallClockTimeout, match="within 1.5 s of wall clock"):
            fetch(url + "/act", 1.5)
        assert time.monotonic() - start < 3


def test_fetch_returns_a_whole_reply():
    from harness.util.wallclock import fetch

    with echoing_judge({}) as where:
        status, body = fetch(f"http://{where}/models", 5)
    assert status == 200 and json.loads(body)["data"][0]["id"] == "judge-a"


def test_the_openvla_client_gives_up_within_its_attempts_times_timeout():
    pytest.importorskip("simplejpeg", reason="the openvla client needs simplejpeg")
    from policies.openvla import OpenVLAPolicy

    with hostile_server("drip_body") as url:
        policy = OpenVLAPolicy(url=url.removesuffix("/v1"), timeout_s=1.0, retries=2, backoff_s=0.1,
                               checkpoint_id="c")
        start = time.monotonic()
        with pytest.raises(ConnectionError, match="unreachable after 2 attempts.*wall clock"):
            policy._post({"x": 1})
        assert time.monotonic() - start < 4  # 2 x 1 s + 0.1 s, not 2 x 60 s of drip


@pytest.mark.parametrize("mode", ["drip_head", "hang"])
def test_the_remote_policy_client_gives_up_within_its_bound(mode):
    from policies.remote import PolicyServerUnavailable, RemotePolicy

    with hostile_server(mode) as url:
        start = time.monotonic()
        with pytest.raises(PolicyServerUnavailable):
            RemotePolicy(url=url.replace("http://", "ws://").removesuffix("/v1"), timeout_s=1.0, connect_retries=2,
                         backoff_s=0.1, checkpoint_id="c")
        assert time.monotonic() - start < 5  # 2 attempts of at most 1 s each (+ backoff)


def test_harness_run_stores_no_echoed_key_nor_url_password(tmp_path):
    """The planner's side of the same: a model server that repeats the key and the Basic header
    (derived from the base_url's password) in its replies (the 401 body: test_secret_values.py)."""
    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    with echoing_judge({}) as where:
        run = harness_proc("run", "planner=vlm", "planner.params.backend=openai", "planner.params.model=judge-a",
                           f"planner.params.base_url=http://alice:{PASSWORD}@{where}",
                           "planner.params.api_key_env=MY_MODEL_KEY", "planner.params.max_retries=0",
                           "planner.params.max_concurrency=1", "split=seen", "limit=2", *FAST, "out=o",
                           cwd=tmp_path, env_extra={"MY_MODEL_KEY": KEY})
    assert run.returncode in (0, 1), run.stderr
    export = harness_proc("export", "o", cwd=tmp_path)
    rows = [json.loads(line) for line in export.stdout.splitlines()]
    assert len(rows) == 2
    import sqlite3

    con = sqlite3.connect(tmp_path / "o" / "results.sqlite")
    stored = json.dumps([list(r) for table in ("episodes", "transcripts")
                         for r in con.execute(f"SELECT * FROM {table}")], default=str)
    con.close()
    assert "You sent Basic *** and ***." in stored, stored[:3000]
    for secret in (KEY, PASSWORD, basic, basic.rstrip("=")):
        assert secret not in run.stdout + run.stderr + export.stdout, secret
        for path in (p for p in tmp_path.rglob("*") if p.is_file()):
            assert secret.encode() not in path.read_bytes(), (secret, path)
