"""The openai backend against a loopback server whose ``usage`` is missing or not finite:
the model's text is kept and the token counts are recorded as unknown (it used to raise
"cannot convert float NaN to integer" and lose the text)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("openai", reason="the openai backend needs the `models` extra")

from planners.vlm.backends import OpenAIBackend  # noqa: E402
from tests.helpers import chat_completion


def serve(body: bytes):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


@pytest.mark.parametrize("usage", [
    {"prompt_tokens": float("nan"), "completion_tokens": 3, "total_tokens": 3},
    {"prompt_tokens": float("inf"), "completion_tokens": float("-inf"), "total_tokens": 0},
    None,
])
def test_non_finite_or_missing_usage_keeps_the_text(usage):
    extra = {"usage": usage} if usage is not None else {}
    httpd = serve(json.dumps(chat_completion("m", "pick up the apple", **extra)).encode())
    try:
        backend = OpenAIBackend("m", base_url=f"http://127.0.0.1:{httpd.server_port}/v1", max_retries=0)
        (reply,) = backend.generate([[{"role": "user", "content": "hi"}]])
        backend.close()
    finally:
        httpd.shutdown()
    assert str(reply) == "pick up the apple"
    expected = {"output_tokens": 3} if usage and usage["completion_tokens"] == 3 else {}
    assert reply.usage == expected  # unknown counts are left out, a finite one is kept


@pytest.mark.parametrize("prompt_tokens", [
    "1" * 400,  # a 400-digit integer: no float holds it
    "9" * 5000,  # past Python's 4300-digit limit on integer text
    "1e300", "-4", "3.5", '"12"', "[1]", "{}", "true", str(2**64),
])
def test_huge_or_ill_typed_usage_keeps_the_text(prompt_tokens):
    body = json.dumps(chat_completion("m", "pick up the apple", usage={"prompt_tokens": 0, "completion_tokens": 3}))
    body = body.replace('"prompt_tokens": 0', f'"prompt_tokens": {prompt_tokens}')
    assert prompt_tokens in body
    httpd = serve(body.encode())
    try:
        backend = OpenAIBackend("m", base_url=f"http://127.0.0.1:{httpd.server_port}/v1", max_retries=0)
        (reply,) = backend.generate([[{"role": "user", "content": "hi"}]])
        backend.close()
    finally:
        httpd.shutdown()
    assert str(reply) == "pick up the apple"
    assert reply.usage == {"output_tokens": 3}
