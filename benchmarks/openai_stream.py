"""Continuous requests to a server: the harness against the server alone.

A fake OpenAI-compatible server on 127.0.0.1 (its own process) models a
continuously batching one: up to ``--concurrency`` requests are decoded at once,
each for ``--prefill-ms`` plus ``--ms-per-token`` per output token, answers of
50-2,000 tokens (drawn per request from a seeded RNG). Its answers are valid
EB-ALFRED plans (one action), padded to their length.

1. The server alone: ``--concurrency`` client threads send requests back to
   back; requests/s from the first request to the last answer.
2. The harness: ``harness run``'s runner (pipelined, the default) with the
   ``vlm`` planner's ``openai`` backend (``max_concurrency`` = the same
   concurrency) on the generated EB-ALFRED ``seen`` split (images off: the
   prompt's text only), ``--slots`` episodes in flight; requests/s measured the
   same way, by the server.

Prints both and ``fraction of the server alone: 0.NN`` (goal >= 0.85). With
``--lockstep`` also the lockstep runner's figure (one round of calls at a time:
each round waits for its longest answer).

    python benchmarks/openai_stream.py [--concurrency 8] [--slots 16] [--episodes 64]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.helpers import chat_completion, send_json  # noqa: E402

TOKENS = (50, 2000)


def serve(conn: Any, concurrency: int, prefill_s: float, per_token_s: float) -> None:
    """The fake server's process: answers POSTs, reports its counters on GET /stats."""
    slots = threading.Semaphore(concurrency)
    lock = threading.Lock()
    rng = random.Random(0)
    stats: dict[str, Any] = {"served": 0, "first": None, "last": None}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, payload: dict) -> None:
            send_json(self, payload)

        def do_GET(self) -> None:  # noqa: N802
            with lock:
                self._send(dict(stats))

        def do_DELETE(self) -> None:  # noqa: N802 - reset the counters
            with lock:
                stats.update(served=0, first=None, last=None)
            self._send({})

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                tokens = rng.randint(*TOKENS)
                action = rng.randrange(20)
                stats["first"] = stats["first"] or time.time()
            with slots:
                time.sleep(prefill_s + tokens * per_token_s)
            plan = {"visual_state_description": " ".join(["x"] * (tokens - 30)), "reasoning_and_reflection": "",
                    "language_plan": "", "executable_plan": [{"action_id": action, "action_name": "a"}]}
            reply = chat_completion(body["model"], json.dumps(plan), usage={
                "prompt_tokens": 100, "completion_tokens": tokens, "total_tokens": tokens + 100})
            with lock:
                stats["served"] += 1
                stats["last"] = time.time()
            self._send(reply)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    conn.send(server.server_address[1])
    server.serve_forever()


def _stats(port: int, method: str = "GET") -> dict[str, Any]:
    import http.client

    c = http.client.HTTPConnection("127.0.0.1", port)
    c.request(method, "/stats")
    out = json.loads(c.getresponse().read())
    c.close()
    return out


def _rate(stats: dict[str, Any]) -> float:
    return stats["served"] / (stats["last"] - stats["first"])


def server_alone(port: int, concurrency: int, requests: int) -> float:
    from openai import OpenAI

    _stats(port, "DELETE")
    client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="EMPTY", max_retries=0)
    left = iter(range(requests))
    lock = threading.Lock()

    def loop() -> None:
        while True:
            with lock:
                if next(left, None) is None:
                    return
            client.chat.completions.create(model="fake", messages=[{"role": "user", "content": "hi"}],
                                           max_tokens=2048, temperature=0.0)

    threads = [threading.Thread(target=loop) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return _rate(_stats(port))


def harness(port: int, concurrency: int, slots: int, episodes: int, pipeline: bool) -> tuple[float, int]:
    from envs.eb_alfred.suite import EBAlfredSuite
    from harness.run.runner import Runner
    from harness.types import RunSpec
    from planners.vlm.planner import VLMPlanner

    _stats(port, "DELETE")
    planner = VLMPlanner(suite="eb_alfred", backend="openai", model="fake", base_url=f"http://127.0.0.1:{port}/v1",
                         max_concurrency=concurrency, max_new_tokens=2048, max_retries=0)
    params = {"render": False, "generated_per_split": episodes}
    spec = RunSpec(suite="eb_alfred", split="seen", agent="vlm", variant="bench", limit=episodes,
                   batch_size=slots, suite_params=params, pipeline=pipeline)
    summary = Runner(spec, EBAlfredSuite(**params), planner, None).run()
    stats = _stats(port)
    return _rate(stats), stats["served"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--slots", type=int, default=16, help="episodes in flight (executor.batch_size)")
    ap.add_argument("--episodes", type=int, default=64)
    ap.add_argument("--prefill-ms", type=float, default=20.0)
    ap.add_argument("--ms-per-token", type=float, default=0.1)
    ap.add_argument("--lockstep", action="store_true", help="also time the lockstep runner")
    args = ap.parse_args()
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(
        target=serve, args=(child, args.concurrency, args.prefill_ms / 1e3, args.ms_per_token / 1e3), daemon=True)
    proc.start()
    port = parent.recv()
    try:
        ours, served = harness(port, args.concurrency, args.slots, args.episodes, True)
        alone = server_alone(port, args.concurrency, served)
        print(f"server alone at concurrency {args.concurrency}: {alone:6.2f} requests/s ({served} requests)")
        print(f"harness, pipelined:               {ours:6.2f} requests/s "
              f"({args.episodes} EB-ALFRED episodes, {args.slots} in flight)")
        if args.lockstep:
            lock, _ = harness(port, args.concurrency, min(args.slots, args.concurrency), args.episodes, False)
            print(f"harness, lockstep:                {lock:6.2f} requests/s "
                  f"({min(args.slots, args.concurrency)} in flight: one round of calls at a time)")
        print(f"fraction of the server alone: {ours / alone:.2f}")
    finally:
        proc.kill()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(main())
