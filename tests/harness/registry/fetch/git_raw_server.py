"""A local HTTP server in the layout of a git host's raw-file endpoint:
``GET /<owner>/<name>/<commit>/<path>`` answers the file of that repository at that commit
(404 for another commit or path), so ``harness fetch`` runs its real download path against it
through ``$EMBODIED_TRANSFER_GITHUB_RAW``."""

from __future__ import annotations

import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class GitRawServer:
    def __init__(self, repo: str, commit: str, root: Path):
        self.repo, self.commit, self.root = repo, commit, root
        self.requests: list[str] = []
        #: Paths whose bytes the server corrupts (tests of the hash check).
        self.corrupt: set[str] = set()
        #: Paths the server answers with 503 (an interrupted fetch).
        self.unavailable: set[str] = set()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
                server.requests.append(path)
                prefix = f"/{server.repo}/{server.commit}/"
                rel = path[len(prefix):] if path.startswith(prefix) else None
                if rel in server.unavailable:
                    self.send_error(503)
                    return
                file = server.root / rel if rel else None
                if file is None or not file.is_file():
                    self.send_error(404)
                    return
                data = file.read_bytes()
                if rel in server.corrupt:
                    data = bytes([data[0] ^ 0xFF]) + data[1:]
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "GitRawServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
