"""A key the harness knows (an environment variable named like a secret, or the one the
openai backend reads from ``api_key_env``, whatever it is called) is redacted from every text
it stores or writes: here a server repeats the key in its 401 body."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.harness.run.test_reliability import FAST, harness

KEY = "sk-planted-7f3a9c2e41d0b8"


@pytest.fixture
def echoing_server():
    """An OpenAI-compatible server that answers every request 401, repeating the key it got."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
            got = self.headers.get("Authorization", "")
            body = json.dumps({"error": {"message": f"Incorrect API key provided: {got.split(' ')[-1]}",
                                         "type": "invalid_request_error", "code": "invalid_api_key"}}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET = _answer  # noqa: N815

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}/v1"
    httpd.shutdown()


@pytest.mark.parametrize("key_env", ["OPENAI_API_KEY", "MY_LAB_VAR"])
def test_an_echoed_key_is_in_no_file_the_harness_wrote(tmp_path, echoing_server, key_env):
    pytest.importorskip("openai", reason="the models extra (the openai backend's client) is not installed")
    env = {key_env: KEY}
    run = harness("run", "planner=vlm", "planner.params.backend=openai", "planner.params.model=m",
                  f"planner.params.base_url={echoing_server}", "planner.params.max_retries=0",
                  f"planner.params.api_key_env={key_env}", "split=seen", "limit=2", *FAST, "out=o",
                  cwd=tmp_path, env_extra=env)
    assert run.returncode == 0, run.stderr
    report = harness("report", "o", cwd=tmp_path, env_extra=env)
    export = harness("export", "o", "-o", "e.jsonl", cwd=tmp_path, env_extra=env)
    table = harness("table", "o", cwd=tmp_path, env_extra=env)
    for proc in (run, report, export, table):
        assert proc.returncode == 0, proc.stderr
        assert KEY not in proc.stdout + proc.stderr
    rows = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert rows and all(r["error_kind"] == "agent" for r in rows)
    assert all("Incorrect API key provided: ***" in r["error_message"] for r in rows), rows[0]["error_message"]
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".html" for p in files)
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path


def test_known_values_are_redacted_in_text(monkeypatch):
    from harness.util.redact import redact_text, register_secret

    monkeypatch.setenv("HF_TOKEN", "hf_abcdefghijklmnop")
    monkeypatch.setenv("SHORT_TOKEN", "abc")  # too short to be told from a word
    assert redact_text("token hf_abcdefghijklmnop refused; abc") == "token *** refused; abc"
    register_secret("registered-value-123")
    assert redact_text("x registered-value-123 y") == "x *** y"
    assert redact_text("/work/rooms") == "/work/rooms"  # $PWD is not a secret
