"""What the websocket hop costs: chunks/s of a zero-cost policy called in-process,
over openpi's protocol (pipelined, one observation per frame) and over
StarVLA's (one frame per batch), on loopback, with LIBERO-sized observations
(two 256x256 RGB frames + 8-D state). Prints ratios measured in this run.

    python benchmarks/policy_transport.py [--batch 8] [--rounds 30]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from harness.interfaces import AgentRequest
from harness.types import EpisodeSpec
from policies import protocols as P
from policies.remote import RemotePolicy
from policies.server import PolicyServer, PolicyService


class Constant:
    name, privileged, replan_steps = "constant", False, None

    def identity(self):
        return {"policy": self.name}

    def reset(self, episode):
        pass

    def act(self, requests):
        return [np.zeros((10, 7), np.float32) for _ in requests]


def _requests(n: int) -> list[AgentRequest]:
    rng = np.random.default_rng(0)
    spec = EpisodeSpec("libero", "libero_spatial", "t00/i00", 7, "put the bowl on the plate")
    return [AgentRequest(spec, {"agentview_image": rng.integers(0, 256, (256, 256, 3), dtype=np.uint8),
                                "wrist_image": rng.integers(0, 256, (256, 256, 3), dtype=np.uint8),
                                "state": rng.normal(size=8).astype(np.float32), "instruction": spec.instruction}, {})
            for _ in range(n)]


def _rate(agent, reqs, rounds: int) -> float:
    agent.act(reqs)  # warm up
    t0 = time.perf_counter()
    for _ in range(rounds):
        agent.act(reqs)
    return rounds * len(reqs) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    reqs = _requests(args.batch)
    stats = P.ActionStats({"min": [-1] * 7, "max": [1] * 7, "mask": [True] * 6 + [False]})
    server = PolicyServer(PolicyService(Constant(), stats=stats), port=0).start_background()
    url = f"ws://127.0.0.1:{server.port}"
    try:
        rows = [("in-process", _rate(Constant(), reqs, args.rounds))]
        for label, kw in (("openpi, 224 px (default)", {}), ("openpi, 256 px (resize=0)", {"resize": 0}),
                          ("starvla, 224 px, one frame per batch", {"protocol": "starvla"})):
            rows.append((label, _rate(RemotePolicy(url=url, **kw), reqs, args.rounds)))
    finally:
        server.stop()
    base_ms = 1000 / rows[0][1]
    print(f"batch {args.batch}, {args.rounds} rounds: chunks/s, ms per chunk, ms added over the in-process call")
    for label, rate in rows:
        print(f"  {label:<40} {rate:12.1f}/s  {1000 / rate:8.3f} ms  +{1000 / rate - base_ms:7.3f} ms")


if __name__ == "__main__":
    main()
