"""The openai backend's run identity says where the model is served: the base URL's host and
port, and what the server's ``GET /models`` lists under the model name (vLLM's ``root``), so
two servers serving different weights under one name give two run ids."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("openai", reason="the openai backend needs the `models` extra")

from planners.vlm.backends import OpenAIBackend, server_address  # noqa: E402


def serve(models: list[dict] | None):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            if models is None or not self.path.endswith("/models"):
                self.send_response(404)
                self.end_headers()
                return
            body = json.dumps({"object": "list", "data": models}).encode()
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


def identity(port: int, path: str = "/v1") -> dict:
    backend = OpenAIBackend("m", base_url=f"http://127.0.0.1:{port}{path}", max_retries=0)
    try:
        return dict(backend.identity())
    finally:
        backend.close()


def test_the_server_and_what_it_serves_are_in_the_identity():
    a = serve([{"id": "m", "object": "model", "owned_by": "vllm", "root": "/ckpts/base"}])
    b = serve([{"id": "m", "object": "model", "owned_by": "vllm", "root": "/ckpts/favor"}])
    silent = serve(None)
    try:
        ia, ib, isilent = identity(a.server_port), identity(b.server_port), identity(silent.server_port)
        assert ia["server"] == f"127.0.0.1:{a.server_port}"
        assert ia["served_model"] == {"id": "m", "root": "/ckpts/base"}
        assert ib["served_model"] == {"id": "m", "root": "/ckpts/favor"}
        assert isilent["served_model"] is None and isilent["server"] == f"127.0.0.1:{silent.server_port}"
        assert ia != ib
        # the path of the base URL is not in it
        assert identity(a.server_port, "/v1/") == ia
    finally:
        for httpd in (a, b, silent):
            httpd.shutdown()


def test_server_address():
    assert server_address("http://Host.Example/v1") == "host.example:80"
    assert server_address("https://user:pw@host.example/v1") == "host.example:443"
    assert server_address("http://[::1]:8000/v1") == "[::1]:8000"
