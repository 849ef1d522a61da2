"""A local HTTP server that serves folders in the model hub's HTTP layout, built
from the hub's documented API (repo info, recursive tree listing, ``resolve``
downloads with ``X-Repo-Commit`` / ``ETag`` / ``X-Linked-Etag`` /
``X-Linked-Size`` headers and byte ranges), so ``huggingface_hub`` runs its real
code path against it through its endpoint setting.

Files at or above ``lfs_threshold`` bytes, or named with one of ``lfs_suffixes``, are served
as LFS files (their listing carries a SHA-256), the others as plain git blobs (SHA-1 of
``blob <n>\\0`` + data).
The commit id is derived from the content, so a changed file is a new commit.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class MirrorRepo:
    repo_id: str
    root: Path
    lfs_threshold: int = 32768
    lfs_suffixes: tuple[str, ...] = ()
    files: dict[str, dict] = field(default_factory=dict)
    commit: str = ""
    #: Paths whose bytes the server corrupts (tests of the hash check).
    corrupt: set[str] = field(default_factory=set)

    def __post_init__(self):
        h = hashlib.sha1()
        for path in sorted(p for p in self.root.rglob("*") if p.is_file()):
            rel = path.relative_to(self.root).as_posix()
            data = path.read_bytes()
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
            meta = {"size": len(data), "oid": blob}
            if len(data) >= self.lfs_threshold or rel.endswith(self.lfs_suffixes):
                meta["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            self.files[rel] = meta
            h.update(f"{rel}\0{blob}\n".encode())
        self.commit = h.hexdigest()


class HubMirror:
    def __init__(self, repos: list[MirrorRepo]):
        self.repos = {r.repo_id: r for r in repos}
        self.requests: list[str] = []
        #: Open client connections, closed on exit: a pooled keep-alive connection must not
        #: outlive the server (a later test's endpoint may get the same port).
        self._connections: set = set()
        mirror = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                mirror._connections.add(self.connection)

            def finish(self):
                mirror._connections.discard(self.connection)
                super().finish()

            def _json(self, obj, status=200):
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _not_found(self, what):
                self.send_response(404)
                body = json.dumps({"error": what}).encode()
                self.send_header("Content-Type", "application/json")
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _repo(self, repo_id, rev):
                repo = mirror.repos.get(repo_id)
                if repo is None:
                    return None
                if rev not in ("main", repo.commit):
                    return None
                return repo

            def do_HEAD(self):
                self.do_GET()

            def do_GET(self):
                url = urllib.parse.urlsplit(self.path)
                path = urllib.parse.unquote(url.path)
                mirror.requests.append(f"{self.command} {path}")
                m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/revision/([^/]+)", path)
                if m:
                    repo = self._repo(m.group(1), m.group(2))
                    if repo is None:
                        return self._not_found("revision")
                    return self._json({"id": repo.repo_id, "_id": "0" * 24, "sha": repo.commit, "private": False,
                                       "gated": False, "disabled": False, "downloads": 0, "likes": 0, "tags": [],
                                       "author": repo.repo_id.split("/")[0],
                                       "siblings": [{"rfilename": p} for p in sorted(repo.files)]})
                m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?", path)
                if m:
                    repo = self._repo(m.group(1), m.group(2))
                    if repo is None:
                        return self._not_found("revision")
                    prefix = (m.group(3) or "").strip("/")
                    entries, dirs = [], set()
                    for rel, meta in sorted(repo.files.items()):
                        if prefix and not rel.startswith(prefix + "/"):
                            continue
                        parts = rel.split("/")
                        for i in range(1, len(parts)):
                            dirs.add("/".join(parts[:i]))
                        e = {"type": "file", "oid": meta["oid"], "size": meta["size"], "path": rel}
                        if "lfs" in meta:
                            e["lfs"] = meta["lfs"]
                        entries.append(e)
                    entries += [{"type": "directory", "oid": "0" * 40, "size": 0, "path": d} for d in sorted(dirs)
                                if not prefix or d.startswith(prefix + "/")]
                    return self._json(entries)
                m = re.fullmatch(r"/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
                if m:
                    repo = self._repo(m.group(1), m.group(2))
                    meta = repo.files.get(m.group(3)) if repo else None
                    if meta is None:
                        return self._not_found("file")
                    data = (repo.root / m.group(3)).read_bytes()
                    if m.group(3) in repo.corrupt:
                        data = bytes([data[0] ^ 0xFF]) + data[1:]
                    start = 0
                    rng = self.headers.get("Range")
                    if rng and (rm := re.fullmatch(r"bytes=(\d+)-", rng.strip())):
                        start = int(rm.group(1))
                    self.send_response(206 if start else 200)
                    self.send_header("X-Repo-Commit", repo.commit)
                    etag = meta["lfs"]["oid"] if "lfs" in meta else meta["oid"]
                    self.send_header("ETag", f'"{etag}"')
                    if "lfs" in meta:
                        self.send_header("X-Linked-Etag", f'"{etag}"')
                        self.send_header("X-Linked-Size", str(meta["size"]))
                    if start:
                        self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                    self.send_header("Content-Length", str(len(data) - start))
                    self.send_header("Accept-Ranges", "bytes")
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data[start:])
                    return
                return self._not_found("route")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "HubMirror":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        for conn in list(self._connections):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
