"""Check that every test that passed with a branch skipped in the README's install ran again, and
passed, with every extra installed: .ci/run's rule for tests whose branches depend on extras.

    python3 .ci/reran.py PARTIAL_LOG RERUN_PASSED_LOG

PARTIAL_LOG lists (one node id a line) the tests that passed in the first pass with a branch skipped
(``$PYTEST_PARTIAL_LOG``, tests/conftest.py); RERUN_PASSED_LOG the tests that passed, every branch
run, in the everything-installed pass (``$PYTEST_PASSED_LOG`` there). Prints each test with its
outcome; exit 1 when one of them did not pass there.
"""

from __future__ import annotations

import sys
from pathlib import Path


def missing(partial: list[str], rerun: list[str]) -> list[str]:
    """The tests of ``partial`` that are not in ``rerun``, in order."""
    passed = set(rerun)
    return [nodeid for nodeid in dict.fromkeys(partial) if nodeid not in passed]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python3 .ci/reran.py PARTIAL_LOG RERUN_PASSED_LOG", file=sys.stderr)
        return 2
    partial, rerun = (Path(p).read_text(encoding="utf-8").split() for p in argv)
    absent = missing(partial, rerun)
    for nodeid in dict.fromkeys(partial):
        print(f"reran.py: {nodeid}: {'NOT passed' if nodeid in absent else 'passed'} with every extra", file=sys.stderr)
    if absent:
        print(f"reran.py: error: {len(absent)} of the {len(set(partial))} tests that skipped a branch in the README's "
              "install did not pass with every extra (above)", file=sys.stderr)
        return 1
    print(f"reran.py: the {len(set(partial))} tests that skipped a branch in the README's install passed with every "
          "extra", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
