"""Every ``harness run`` command written in the README and docs/ composes: its overrides name
existing suites, agents, variants, splits' suites and parameters (``planner=alfred_oracle``
would fail here). Checked in-process without running anything: what only the user's machine
holds (a checkpoint, a data folder, an optional extra, a local path in an example) is allowed
to be missing; a name or a key the harness does not know is not."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from harness.cli.run import _experiment_jobs
from harness.run.config import ConfigError, MissingPrerequisite, compose, expand_sweeps
from harness.run.spec import to_run_spec
from tests.helpers import require_example_plugin

ROOT = Path(__file__).resolve().parents[1]
#: Placeholders: the command is a pattern, not one to run as written.
PLACEHOLDER = re.compile(r"…|\.\.\.|<[a-z]|\bNAME\b|\$\(")
#: Errors about what only a user's machine holds (paths written as examples).
LOCAL = ("does not exist", "not found", "no such file", "not a directory", "has no splits/splits.json")


def documented_commands() -> list[tuple[str, str]]:
    out = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]:
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            for m in re.finditer(r"(?:^|`|\$ |\s{2,})(harness run [^`#\n]*)", line):
                text, j = m.group(1).rstrip(), i
                if m.group(0).startswith("`") and "`" not in line[m.end():]:  # inline code over two lines
                    text += " " + lines[i + 1].partition("`")[0].strip()
                while text.endswith("\\") and j + 1 < len(lines):  # a command continued on the next lines
                    j += 1
                    text = text[:-1] + " " + lines[j].split("#")[0].strip()
                out.append((f"{path.relative_to(ROOT)}:{i + 1}", text.strip()))
    return out


COMMANDS = documented_commands()


def _suites(overrides: list[str]) -> list[str]:
    """The suites a job's overrides name (``suite=A`` or ``suite=A,B``)."""
    return [s for o in overrides if o.startswith("suite=") for s in o.split("=", 1)[1].split(",")]


def _example_suites() -> set[str]:
    """The suites the example plugin (examples/plugin_suite) registers, from its entry points."""
    import tomllib

    meta = tomllib.loads((ROOT / "examples" / "plugin_suite" / "pyproject.toml").read_text(encoding="utf-8"))
    return set(meta["project"]["entry-points"]["embodied_transfer.suites"])


def test_the_docs_hold_commands():
    assert len(COMMANDS) > 50


@pytest.mark.parametrize("where, command", [pytest.param(w, c, id=w) for w, c in COMMANDS
                                            if not PLACEHOLDER.search(c)])
def test_documented_run_command_composes(where, command, monkeypatch):
    for name in ("BASE_MODEL", "FAVOR_SFT_MODEL", "CFG_SFT_MODEL", "FAVOR_SFT_ADAPTER", "CFG_SFT_ADAPTER"):
        monkeypatch.delenv(name, raising=False)
    words = shlex.split(command)[2:]
    multirun = "-m" in words
    overrides, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word == "--cfg":
            skip = True
        elif not word.startswith("-"):
            overrides.append(word)
    jobs = _experiment_jobs(overrides, multirun) or (expand_sweeps(overrides) if multirun else [overrides])
    for job in jobs:
        try:
            to_run_spec(compose(job, missing=[]))
        except MissingPrerequisite:
            pass
        except ConfigError as exc:
            if _example_suites() & set(_suites(job)):  # the example plugin's suites exist only once it is installed
                require_example_plugin()
            if not any(s in str(exc).lower() for s in LOCAL):
                raise AssertionError(f"{where}: {command}: {exc}") from None
