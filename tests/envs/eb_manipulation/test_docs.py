"""Every ``harness run`` command shown in docs/eb_manipulation.md composes into a valid config
(keys the page names must be real config keys)."""

from __future__ import annotations

import re
import shlex

import pytest

from harness.run.config import compose
from harness.run.spec import to_run_spec
from tests.conftest import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "eb_manipulation.md"


def _commands() -> list[list[str]]:
    blocks = re.findall(r"```bash\n(.*?)```", PAGE.read_text(), flags=re.S)
    out = []
    for block in blocks:
        for line in block.splitlines():
            if line.startswith("harness run "):
                out.append(shlex.split(line)[2:])
    return out


def test_the_page_shows_run_commands():
    cmds = _commands()
    assert len(cmds) >= 5
    joined = " ".join(" ".join(c) for c in cmds)
    assert "planner.params.on_bad_output=" in joined and "planner.params.manipulation_shots=" in joined


@pytest.mark.parametrize("argv", _commands(), ids=lambda a: " ".join(a)[:80])
def test_each_command_composes(argv, monkeypatch):
    # The page's variant sweeps read their checkpoints from the environment, as a user's would.
    monkeypatch.setenv("BASE_MODEL", "/ckpts/base")
    overrides = []
    for arg in argv:
        if arg == "-m":
            continue
        key, _, value = arg.partition("=")
        if "," in value and "-m" in argv:  # a multirun sweep: its first value stands for all
            value = value.split(",")[0]
        overrides.append(f"{key}={value}")
    spec = to_run_spec(compose(overrides))
    assert spec.suite == "eb_manipulation"


def test_an_unknown_key_is_refused():
    with pytest.raises(Exception):
        to_run_spec(compose(["suite=eb_manipulation", "planner=vlm", "planner.params.no_such_key=1"]))
