"""``harness --help`` and each command import only what they run: the chosen command's module
(harness/cli/entry.py), never another command's rooms, so the command line starts at once."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: Rooms no command listing needs (the table, the report, the runner, judging) and what they load.
HEAVY = ("harness.tables", "harness.report", "harness.run", "harness.judging", "pandas")

PROBE = """
import sys
from harness.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
print(" ".join(sorted(m for m in sys.modules if m.startswith({heavy!r}))))
"""


def _loaded(argv: list[str]) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv, heavy=HEAVY)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split("\n")[-2].split())


def test_help_imports_no_command_room():
    assert _loaded(["--help"]) == set()


@pytest.mark.parametrize("argv, expected, not_expected", [
    (["store", "--help"], set(), {"harness.tables.build", "harness.report", "harness.run.runner"}),
    (["table", "--help"], {"harness.tables.build"}, {"harness.run.runner", "harness.report"}),
])
def test_a_command_imports_its_own_rooms_only(argv, expected, not_expected):
    loaded = _loaded(argv)
    assert expected <= loaded and not (not_expected & loaded), loaded
