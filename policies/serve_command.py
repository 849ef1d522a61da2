"""``harness serve-policy``: a registered policy served over websockets (policies/server.py).

The policies package adds this command to ``harness`` through the ``embodied_transfer.commands``
entry-point group (pyproject.toml).
"""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve-policy", help="serve a registered policy over websockets (openpi and StarVLA protocols)",
        description="e.g. harness serve-policy policy=vla policy.params.checkpoint=/ckpt port=8000 "
        "(loopback by default; host=0.0.0.0 exposes it). See policies/server.py.",
    )
    p.add_argument("overrides", nargs="*", help="policy=NAME, policy.params.KEY=VALUE, host=, port=, max_batch=")


def main(args: argparse.Namespace) -> int:
    from policies.server import main as serve_policy

    return serve_policy(args.overrides)
