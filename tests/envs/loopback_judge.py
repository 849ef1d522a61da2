"""A loopback OpenAI-compatible chat-completions server whose reply is ``reply_of(prompt_text)``
(for the video-QA suites' ``harness judge`` tests)."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from tests.helpers import send_json


def serve(reply_of: Callable[[str], str]) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._send({"object": "list", "data": [{"id": "judge-x"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            text = body["messages"][-1]["content"]
            if isinstance(text, list):
                text = " ".join(p.get("text", "") for p in text)
            reply = reply_of(text)
            self._send({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": reply}}],
                        "usage": {"prompt_tokens": len(text.split()), "completion_tokens": len(reply.split()),
                                  "total_tokens": 0}})

        def _send(self, obj: Any) -> None:
            send_json(self, obj)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{port}/v1"
