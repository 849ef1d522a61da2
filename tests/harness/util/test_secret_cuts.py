"""No credential, nor any prefix of one of 8 characters or more, in any file under OUT, TMPDIR or
what ``harness report`` / ``harness export`` write, whatever the server does with it:

* a judge server that repeats the key across the 2,000-character cut of an error verdict's
  reason (harness/judging/stage.py), at every offset around it;
* a model server that repeats the key across the ``max_reply_chars`` cut of a reply
  (planners/vlm/reply_body.py), in a body read whole and in one cut while it arrives;
* a run killed with SIGKILL while a long reply naming the key waits in the spool
  (harness/util/spool.py): the spool file holds the redacted text, and the next ``harness`` command
  removes the folder the dead process left;
* a policy server that echoes ``policy.params.api_key`` (declared ``secret="value"`` in
  policies/plugin.py): neither on stderr nor in a record.

Real loopback servers and real subprocesses, as the other hostile-server tests."""

from __future__ import annotations

import json
import os
import signal
import socketserver
import subprocess
import sys
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from tests.harness import judge_fixtures as fx
from tests.harness.util.test_hostile_servers import serving
from tests.harness.run.test_reliability import FAST
from tests.helpers import chat_completion

REPO = Path(__file__).resolve().parents[3]
#: 51 characters, as an OpenAI key of the kind the finding used.
KEY = "sk-cut-7f3a9c2e5b8d1046e9a7c3f5b2d8e0a4c6f1b3d5e7a9"
#: The shortest prefix of a key that must not be found anywhere.
PREFIX_CHARS = 8


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    (tmp / "tmp").mkdir(exist_ok=True)
    return {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp / "tmp"), **extra}


def _no_prefix_anywhere(root: Path, *texts: str) -> None:
    """No prefix of KEY of PREFIX_CHARS characters or more in a file under ``root`` nor in ``texts``."""
    needle = KEY[:PREFIX_CHARS]
    for text in texts:
        assert needle not in text, text[max(0, text.find(needle) - 200):text.find(needle) + 100]
    for path in (p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        assert needle.encode() not in data, (path, data[max(0, data.find(needle.encode()) - 200):][:300])


def _report_and_export(tmp_path: Path, out: Path, env: dict, *judge: str) -> str:
    said = []
    for args in (["report", str(out), *judge], ["export", str(out), "-o", str(tmp_path / "e.jsonl"), *judge]):
        res = subprocess.run([sys.executable, "-m", "tests.harness.judge_fixtures", "cli", *args], cwd=REPO,
                             env=env, capture_output=True, text=True, timeout=180)
        assert res.returncode == 0, res.stderr
        said.append(res.stdout + res.stderr)
    assert (tmp_path / "e.jsonl").is_file()
    return "".join(said)


@pytest.fixture(autouse=True)
def _registered_only_here():
    with fx.registered_only_here():
        yield


# --- the judge's reason, cut at 2,000 characters ------------------------------------------
@contextmanager
def straddling_judge(pad_from: int) -> Iterator[str]:
    """A judge server answering request n (from 1) with a 401 whose message puts the key after
    ``pad_from + n`` characters: over many requests the key crosses any cut near there."""
    count = [0]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self._reply(404, {})

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            count[0] += 1
            message = "k" * (pad_from + count[0]) + KEY + " is not a valid key"
            self._reply(401, {"error": {"message": message, "type": "invalid_request_error"}})

        def _reply(self, status, payload):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as port:
        yield f"http://127.0.0.1:{port}/v1"


def test_a_key_across_the_judge_reason_cut_leaves_no_prefix(tmp_path):
    pytest.importorskip("openai", reason="the openai backend needs the `models` extra")
    from harness.judging.stage import _MAX_REASON_CHARS

    questions = 70
    env = _env(tmp_path, MY_JUDGE_KEY=KEY)
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "tests.harness.judge_fixtures", "cli", "run", f"suite={fx.SUITE_NAME}",
                          "planner=answerer", "executor=local", f"out={out}", "progress=false",
                          f"suite.params.questions={questions}"], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=180)
    assert run.returncode == 0, run.stderr
    # The reason reads "AuthenticationError: Error code: 401 - kkk...": over the requests the key
    # starts at 1,940 to 2,009 characters, so the cut at 2,000 falls inside it 50 times.
    head = len("AuthenticationError: Error code: 401 - ")
    with straddling_judge(_MAX_REASON_CHARS - 61 - head) as url:
        judge = subprocess.run(
            [sys.executable, "-m", "tests.harness.judge_fixtures", "cli", "judge", str(out), "judge=openai",
             "judge.model=judge-a", f"judge.params.base_url={url}", "judge.params.api_key_env=MY_JUDGE_KEY",
             "judge.params.max_retries=0", "judge.params.max_concurrency=1"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert judge.returncode == 1, judge.stderr
    import sqlite3

    con = sqlite3.connect(out / "results.sqlite")
    reasons = [r[0] for r in con.execute("SELECT reason FROM judgements WHERE status = 'error'")]
    con.close()
    assert len(reasons) == questions
    assert all(r.startswith("AuthenticationError: Error code: 401 - kkk") for r in reasons), reasons[0][:80]
    # Redacted first, the key takes 3 characters: the reasons where it started before about 1,980
    # are whole; the others were cut (after the marker, or before it: never inside it).
    whole = [r for r in reasons if r.endswith("k*** is not a valid key")]
    assert 0 < len(whole) < questions, [r[-30:] for r in reasons]
    assert all(len(r) <= _MAX_REASON_CHARS for r in reasons)
    assert all(r.endswith("k") or "k***" in r[-30:] for r in reasons), [r[-30:] for r in reasons]
    said = _report_and_export(tmp_path, out, env, "--judge", "judge-a")
    _no_prefix_anywhere(tmp_path, judge.stdout + judge.stderr, said)


# --- a reply cut at max_reply_chars -------------------------------------------------------
@contextmanager
def straddling_model(text_of) -> Iterator[str]:
    """A model server whose chat reply n (from 1) has the content ``text_of(n)``."""
    count = [0]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self._reply(404, b"{}")

        def do_POST(self):
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            count[0] += 1
            self._reply(200, json.dumps(chat_completion(req["model"], text_of(count[0]))).encode())

        def _reply(self, status, data):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as port:
        yield f"http://127.0.0.1:{port}/v1"


@pytest.mark.parametrize("tail", [0, 200_000], ids=["body-read-whole", "body-cut-in-transit"])
def test_a_key_across_the_reply_cut_leaves_no_prefix(tmp_path, tail):
    """The reply's text is cut at max_reply_chars=5000 (and so spooled: over 4,096 characters);
    the key starts 20 characters before the cut. With 200,000 characters after it the body is
    read only in part (the cut happens while it arrives)."""
    pytest.importorskip("openai", reason="the openai backend needs the `models` extra")
    limit = 5000
    env = _env(tmp_path, MY_MODEL_KEY=KEY)
    with straddling_model(lambda n: "a" * (limit - 20 - n) + KEY + "b" * tail) as url:
        run = subprocess.run(
            [sys.executable, "-m", "harness.cli", "run", "planner=vlm", "planner.params.backend=openai",
             "planner.params.model=m", f"planner.params.base_url={url}", "planner.params.api_key_env=MY_MODEL_KEY",
             f"planner.params.max_reply_chars={limit}", "planner.params.max_retries=0", "split=seen", "limit=2",
             *FAST, "out=o"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode in (0, 1), run.stderr
    import sqlite3

    con = sqlite3.connect(tmp_path / "o" / "results.sqlite")
    raw = [r[0] for r in con.execute("SELECT raw_output FROM transcripts")]
    con.close()
    assert raw and all(r.startswith("a" * 4000) and "a***" in r and len(r) <= limit for r in raw), \
        [(len(r), r[-60:]) for r in raw]
    said = _report_and_export(tmp_path, tmp_path / "o", env)
    _no_prefix_anywhere(tmp_path, run.stdout + run.stderr, said)


# --- the spool of a run killed with SIGKILL -----------------------------------------------
_KILLED_RUN = """
import json, os, sys, threading
from harness.cli.entry import main
from harness.check.scripted import scripted_replies

key = os.environ["MY_API_KEY"]
plan = json.dumps({"visual_state_description": "v" * 6000 + key + "w" * 100, "reasoning_and_reflection": "r",
                   "language_plan": "l", "executable_plan": [{"action_id": 0, "action_name": "find a Cart"}]})

def reply(text, schema, call):
    if call == 0:
        return plan
    threading.Event().wait()  # the next call hangs: the first reply waits in the spool

with scripted_replies(reply, name="spooled"):
    sys.exit(main(["run", "suite=eb_alfred", "split=seen", "planner=vlm", "planner.params.backend=scripted",
                   "planner.params.script=spooled", "planner.params.model=scripted-model", "limit=1",
                   "suite.params.render=false", "suite.params.generated_per_split=40", "out=o", "progress=false"],
                  process=True))
"""


def test_a_sigkilled_run_leaves_no_key_in_its_spool_and_the_next_start_removes_it(tmp_path):
    env = _env(tmp_path, MY_API_KEY=KEY)
    spool_root = tmp_path / "tmp"
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_RUN], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not any(spool_root.glob("harness-spool-*/*.txt")):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no reply was spooled"
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = list(spool_root.glob("harness-spool-*/*.txt"))
    assert left, "the killed process's spool is gone (nothing to check)"
    assert all("***" in p.read_text(errors="replace") for p in left)
    _no_prefix_anywhere(spool_root)
    # Another harness process's live spool folder is kept; the dead one's goes at the next start.
    live = spool_root / f"harness-spool-{os.getpid()}-live"
    live.mkdir()
    res = subprocess.run([sys.executable, "-m", "harness.cli", "list"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert [p.name for p in spool_root.glob("harness-spool-*")] == [live.name]


# --- policy.params.api_key echoed by a policy server --------------------------------------
@contextmanager
def echoing_policy_server() -> Iterator[int]:
    """A websocket policy server (openpi's framing: metadata on connect, msgpack requests) that
    answers every request with an openpi-style error text repeating the Authorization header."""
    from websockets.sync.server import serve

    from policies import wire

    def handler(ws):
        got = ws.request.headers.get("Authorization", "")
        ws.send(wire.packb({"note": f"hello {got}"}))
        for _ in ws:
            ws.send(f"Traceback (most recent call last):\n  ...\nPermissionError: refused {got} (key {KEY})")
            return

    with serve(handler, "127.0.0.1", 0) as server:
        import threading

        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield server.socket.getsockname()[1]
        finally:
            server.shutdown()


def test_a_policy_server_echoing_the_api_key_reaches_neither_stderr_nor_a_record(tmp_path):
    pytest.importorskip("websockets", reason="policy=remote needs the `policies` extra")
    pytest.importorskip("libero", reason="the libero suite needs the `libero` extra")
    env = _env(tmp_path)
    with echoing_policy_server() as port:
        run = subprocess.run(
            [sys.executable, "-m", "harness.cli", "run", "suite=libero", "split=libero_spatial", "policy=remote",
             f"policy.params.url=ws://127.0.0.1:{port}", f"policy.params.api_key={KEY}",
             "policy.params.connect_retries=2", "policy.params.backoff_s=0.05", "policy.params.checkpoint_id=c",
             "suite.params.tasks=[0]", "suite.params.trials=1", "suite.params.max_steps=10", "out=o",
             "progress=false"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode in (0, 1), run.stderr[-3000:]
    import sqlite3

    con = sqlite3.connect(tmp_path / "o" / "results.sqlite")
    errors = [r[0] for r in con.execute("SELECT error_message FROM episodes")]
    con.close()
    assert errors and all("PermissionError: refused Api-Key *** (key ***)" in (e or "") for e in errors), errors
    _no_prefix_anywhere(tmp_path, run.stdout + run.stderr)


# --- the boundary function itself ---------------------------------------------------------
def test_a_key_cut_in_transit_leaves_no_prefix_in_the_error_naming_the_body():
    """A body that ends before it is a chat completion is an error naming its first 120 bytes;
    the key starts at byte 100 of it, so the cut keeps 20 of its characters unless the end of a
    cut text is redacted as a key's prefix (harness.util.redact.redact_cut)."""
    from harness.util.redact import register_secret
    from planners.vlm.reply_body import read_reply

    register_secret(KEY)
    body = b'{"choices":[{"message":{"content":"' + b"p" * (100 - 35) + KEY.encode() + b" and more"
    with pytest.raises(ValueError, match="not a chat completion") as info:
        read_reply([body], 10_000)
    assert KEY[:PREFIX_CHARS] not in str(info.value) and str(info.value).endswith("pp***'"), str(info.value)


@pytest.mark.parametrize("limit", range(90, 100))
def test_redact_cut_redacts_first_and_never_splits_the_marker(limit):
    from harness.util.redact import REDACTED, redact_cut, register_secret

    register_secret(KEY)
    text = "x" * 94 + KEY + "y" * 50
    got = redact_cut(text, limit)
    assert KEY[:PREFIX_CHARS] not in got and len(got) <= limit
    redacted = "x" * 94 + REDACTED + "y" * 50
    assert got == (redacted[:limit] if limit >= 97 or limit <= 94 else "x" * 94), got[-8:]  # 95, 96: no "*"/"**"
