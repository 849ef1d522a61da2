"""Resident memory of a run whose model server answers huge replies: bounded by
``max_reply_chars``?

    python benchmarks/reply_memory.py [--sizes-mb 10 200] [--calls 3] [--episodes 8] [--shape escaped]

A fake OpenAI-compatible server on 127.0.0.1 (its own process) answers the first
``--calls`` chat completions of each run with a reply of N MB (an EB-ALFRED plan
whose ``visual_state_description`` is N MB of text), then with an empty plan, which
ends the episode. For each N, one episode of

    harness run suite=eb_alfred split=base limit=1 planner=vlm planner.params.backend=openai
        planner.params.model=fake planner.params.base_url=http://127.0.0.1:PORT/v1
        planner.params.max_reply_chars=LIMIT ...

runs in a subprocess, twice: with the default limit (1,000,000 characters) and with
the limit out of the way (10^12: the whole body is read and kept, as before the limit
existed). Prints the subprocess's peak resident memory (``ru_maxrss`` of that child,
from ``os.wait4``), the store's size on disk (``results.sqlite`` and its ``-wal``),
the raw output kept per call, the calls flagged ``output_truncated``, the record's planner
output errors and the wall time. It is a benchmark, run by hand, not a
timed test.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.helpers import chat_completion  # noqa: E402

MB = 1 << 20
UNLIMITED = 10**12


#: Reply shapes: plain ASCII text (one byte a character in the body), or characters outside
#: the BMP that JSON escapes as a surrogate pair (``\\ud83d\\ude00``: 12 bytes a character, the
#: most a character can take in a body, planners/vlm/reply_body.py BYTES_PER_CHAR_BOUND).
SHAPES = {"plain": "x", "escaped": "\U0001F600", "bmp_escaped": "\u00e9", "newlines": "\n"}


def _body(size_mb: int, shape: str = "plain") -> bytes:
    char = SHAPES[shape]
    per_char = len(json.dumps(char)) - 2
    plan = {"visual_state_description": char * (size_mb * MB // per_char), "reasoning_and_reflection": "",
            "language_plan": "", "executable_plan": [{"action_id": 0, "action_name": "a"}]}
    return json.dumps(chat_completion("fake", json.dumps(plan), usage={
        "prompt_tokens": 100, "completion_tokens": size_mb * MB // 4, "total_tokens": 0})).encode()


def serve(conn: Any) -> None:
    """The server's process. ``PUT /size/N`` sets the reply size (N MB) and resets the call count."""
    state: dict[str, Any] = {"body": b"", "calls": 0, "limit": 0}
    empty = json.dumps(chat_completion("fake", json.dumps({"executable_plan": []}))).encode()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _write(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            view = memoryview(data)
            try:
                for i in range(0, len(view), 1 << 16):
                    self.wfile.write(view[i:i + (1 << 16)])
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client stopped reading: its limit

        def handle(self) -> None:
            try:
                super().handle()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client hung up (after its limit): nothing to answer

        def do_PUT(self) -> None:  # noqa: N802
            _, _, n, calls, shape = self.path.split("/")
            with lock:
                state.update(body=_body(int(n), shape), calls=0, limit=int(calls))
            self._write(b"{}")

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            with lock:
                state["calls"] += 1
                data = state["body"] if state["calls"] <= state["limit"] else empty
            self._write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    conn.send(server.server_address[1])
    server.serve_forever()


def _put(port: int, size_mb: int, calls: int, shape: str = "plain") -> None:
    import http.client

    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("PUT", f"/size/{size_mb}/{calls}/{shape}")
    c.getresponse().read()
    c.close()


def episode(port: int, out: Path, limit: int, episodes: int = 1, split: str = "base") -> dict[str, Any]:
    """``episodes`` episodes of ``harness run`` in a subprocess (their calls in flight together,
    up to the backend's default max_concurrency of 8): its peak RSS, the store, the kept outputs."""
    cmd = [sys.executable, "-m", "harness.cli", "run", "suite=eb_alfred", f"split={split}", f"limit={episodes}",
           "planner=vlm", "planner.params.backend=openai", "planner.params.model=fake",
           f"planner.params.base_url=http://127.0.0.1:{port}/v1", "planner.params.max_retries=0",
           "planner.params.request_timeout_s=600", "planner.params.json_schema='false'",
           "planner.params.num_examples=0", f"planner.params.max_reply_chars={limit}",
           f"out={out}", "progress=false"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out.mkdir(parents=True)
    log = out.parent / "run.log"
    t0 = time.monotonic()
    with log.open("wb") as fh:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT)
        # Reap the child ourselves: wait4 gives its own peak RSS (not this process's, not the server's).
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"harness run failed ({proc.returncode}): {log.read_text()[-2000:]}")
    db = out / "results.sqlite"
    size = sum(p.stat().st_size for p in out.glob("results.sqlite*"))
    con = sqlite3.connect(db)
    rows = con.execute("SELECT length(raw_output), meta FROM transcripts ORDER BY call").fetchall()
    found = con.execute("SELECT extra, planner_output_errors FROM episodes").fetchall()
    extra = {"outputs_truncated": sum(json.loads(e or "{}").get("outputs_truncated", 0) for e, _ in found)}
    output_errors = sum(n for _, n in found)
    con.close()
    return {"rss_mb": usage.ru_maxrss / 1024, "store_mb": size / MB, "wall_s": wall,
            "kept": [r[0] for r in rows], "truncated": sum('"output_truncated": true' in (r[1] or "") for r in rows),
            "outputs_truncated": extra.get("outputs_truncated", 0), "output_errors": output_errors}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes-mb", type=int, nargs="+", default=[10, 200])
    ap.add_argument("--calls", type=int, default=3, help="calls answered with the huge reply per episode")
    ap.add_argument("--no-unlimited", action="store_true", help="skip the runs without a limit")
    ap.add_argument("--episodes", type=int, default=1,
                    help="episodes in the run, their calls in flight together (8: the default max_concurrency)")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="plain",
                    help="plain: one byte a character; escaped: 12 (a JSON surrogate pair), the most")
    ap.add_argument("--split", default="base",
                    help="EB-ALFRED split (base needs EmbodiedBench's data; seen is generated)")
    args = ap.parse_args()
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(target=serve, args=(child,), daemon=True)
    proc.start()
    port = parent.recv()
    print("| reply per call | max_reply_chars | peak RSS of the run | store | kept per call (chars) "
          "| calls flagged | output errors | wall |")
    print("|---|---|---|---|---|---|---|---|")
    try:
        for size in args.sizes_mb:
            for limit in ([1_000_000] if args.no_unlimited else [1_000_000, UNLIMITED]):
                _put(port, size, args.calls * args.episodes, args.shape)
                with tempfile.TemporaryDirectory(prefix="reply_memory_") as tmp:
                    r = episode(port, Path(tmp) / "out", limit, args.episodes, args.split)
                kept = ", ".join(f"{k:,}" for k in r["kept"])
                name = f"{limit:,}" if limit != UNLIMITED else "10^12 (no limit)"
                print(f"| {size} MB | {name} | {r['rss_mb']:.0f} MB | {r['store_mb']:.2f} MB | {kept} "
                      f"| {r['truncated']} (record: {r['outputs_truncated']}) | {r['output_errors']} | {r['wall_s']:.1f} s |", flush=True)
    finally:
        proc.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
