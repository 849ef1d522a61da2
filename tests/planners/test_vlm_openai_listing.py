"""The ``openai`` backend's model listing (``GET /models``, read at start for the run identity) is
bounded as a whole exchange: connect and read by the wall clock, the body by its bytes and the
parse by its entries (planners/vlm/reply_body.py ``read_listing``). A server listing millions of
models is refused in about the time 4 MiB take on loopback, with one warning line, in bounded
memory, and the backend starts without a ``served_model``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip("openai", reason="the openai backend needs the `models` extra")

REPO = Path(__file__).resolve().parents[2]


@contextmanager
def listing_server(entries: int) -> Iterator[str]:
    """A loopback server whose ``GET /models`` lists ``entries`` models (generated as it sends,
    fixed-width entries: 2,000,000 make a 99 MB body), the model ``m`` first."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            first = b'{"object":"list","data":['
            entry = b'{"id":"m-%09d","object":"model","owned_by":"x","root":"/r"}'
            self.send_response(200)  # HTTP/1.0: the body ends when the connection closes
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            try:
                self.wfile.write(first)
                batch = []
                for i in range(entries):
                    item = entry % i if i else b'{"id":"m","object":"model","owned_by":"x","root":"/r/xxxxx"}'
                    batch.append(item + (b"," if i < entries - 1 else b""))
                    if len(batch) == 2000:
                        self.wfile.write(b"".join(batch))
                        batch = []
                self.wfile.write(b"".join(batch) + b"]}")
            except OSError:  # the client stopped reading
                return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


_PROBE = """
import logging, resource, sys, time
logging.basicConfig(level=logging.WARNING, format="%(message)s")
from planners.vlm.backends import OpenAIBackend
start = time.monotonic()
b = OpenAIBackend("m", base_url=sys.argv[1], max_retries=0)
elapsed = time.monotonic() - start
print(round(elapsed, 3), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, repr(b.identity()["served_model"]))
"""


def _probe(url: str) -> tuple[str, float, int, str]:
    res = subprocess.run([sys.executable, "-c", _PROBE, url], cwd=REPO, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert res.returncode == 0, res.stderr
    elapsed, peak_mb, served = res.stdout.strip().splitlines()[-1].split(maxsplit=2)
    return served, float(elapsed), int(peak_mb), res.stderr


def test_a_small_listing_names_the_served_weights():
    with listing_server(3) as url:
        served, _, _, err = _probe(url)
    assert served == "{'id': 'm', 'root': '/r/xxxxx'}" and not err.strip(), (served, err)


def test_a_huge_model_listing_is_refused_fast_in_bounded_memory():
    with listing_server(3) as url:
        _, _, small_peak, _ = _probe(url)
    with listing_server(2_000_000) as url:  # 99 MB
        served, elapsed, peak, err = _probe(url)
    lines = [line for line in err.splitlines() if line.strip()]
    assert elapsed < 5 and peak - small_peak < 60, (elapsed, peak, small_peak)  # s, MB: 4 MiB read, not 99 MB
    assert served == "None", served
    assert len(lines) == 1 and "model listing (GET /models) has more than 4194304 bytes" in lines[0], err


def test_a_listing_of_too_many_small_entries_is_refused_by_its_parse():
    from planners.vlm.reply_body import ListingTooLarge, read_listing

    body = json.dumps({"data": [{"id": str(i)} for i in range(50)]}).encode()
    assert len(read_listing([body], max_entries=50)) == 50
    with pytest.raises(ListingTooLarge, match="more than 10 entries"):
        read_listing([body], max_entries=10)
    nested = json.dumps({"data": [{"id": "m", "p": [{}] * 1000}]}).encode()  # objects inside one entry
    start = time.monotonic()
    with pytest.raises(ListingTooLarge):
        read_listing([nested], max_entries=10)
    assert time.monotonic() - start < 1
