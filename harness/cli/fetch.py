"""``harness fetch``: an official dataset (model hub + pinned git files) into the data cache."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.cli.common import UsageError, summary
from harness.registry.datasets import FetchError, fetch


def add_parser(sub: Any) -> None:
    p = sub.add_parser("fetch", help=summary("fetch"))
    p.add_argument("dataset", help="a dataset a suite declares (`harness list` names them; harness/registry/datasets.py)")
    p.add_argument("--revision", default=None, help="branch, tag or commit to fetch (default: the locked commit)")
    p.add_argument("--update", action="store_true", help="re-resolve the branch instead of the locked commit")
    p.add_argument("--checkout", default=None, metavar="DIR",
                   help="a local checkout of the git repository the dataset takes pinned files from, read instead "
                        "of fetching them (offline; the declaration may name an environment variable for it too)")


def main(args: argparse.Namespace) -> int:
    try:
        fetch(args.dataset, revision=args.revision, update=args.update, checkout=args.checkout,
              log=lambda line: print(line, file=sys.stderr))
    except FetchError as exc:
        raise UsageError(str(exc)) from None
    return 0

