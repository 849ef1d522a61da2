"""Every command of docs/writing-a-suite.md runs: its shell commands (``harness ...`` lines of
its plain code blocks, in order, ``runs/`` in a temporary folder) and its complete Python
snippets (blocks that start with an import). Needs the example plugin installed."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import socket
import sys

import pytest

from tests.conftest import REPO_ROOT
from tests.harness import judge_fixtures
from tests.helpers import require_example_plugin

PAGE = REPO_ROOT / "docs" / "writing-a-suite.md"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def blocks(lang: str) -> list[str]:
    return [body for kind, body in _BLOCK.findall(PAGE.read_text(encoding="utf-8")) if kind == lang]


def shell_commands() -> list[str]:
    return [line.strip() for body in blocks("") for line in body.splitlines() if line.strip().startswith("harness ")]


def python_snippets() -> list[str]:
    return [body for body in blocks("python") if body.lstrip().startswith(("from ", "import "))]


def test_the_page_has_commands_and_snippets():
    commands = shell_commands()
    assert any(c.startswith("harness table runs/example") for c in commands)
    assert not any("table out=" in c for c in commands)  # table takes the run's folder
    assert len(python_snippets()) >= 2


def _env():
    path = os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "examples" / "plugin_suite"), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def test_every_shell_command_runs(tmp_path):
    require_example_plugin()
    for command in shell_commands():
        args = shlex.split(command)[1:]
        args = [a.replace("runs/", f"{tmp_path}/runs/") for a in args]
        if args[0] == "run":
            args.append("progress=false")
        server = None
        if args[0] == "judge":  # the documented judge, a loopback OpenAI-compatible server (model judge-a)
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            server = judge_fixtures.serve(port, tmp_path / "judge.log", 0.0)
            args = [a.replace("127.0.0.1:8000", f"127.0.0.1:{port}").replace("judge.model=MODEL", "judge.model=judge-a")
                    for a in args]
        try:
            done = subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=tmp_path, env=_env(),
                                  capture_output=True, text=True, timeout=300)
        finally:
            if server is not None:
                server.shutdown()
                server.server_close()
        assert done.returncode == 0, f"{command}: {done.stderr[-2000:]}"
        if args[:2] == ["table", f"{tmp_path}/runs/example"] and "--by" in args:
            assert "| oracle | example/test | 10 | 100.0 |" in done.stdout


@pytest.mark.parametrize("index", range(len(python_snippets())))
def test_every_python_snippet_runs(tmp_path, index):
    require_example_plugin()
    code = python_snippets()[index].replace("runs/", f"{tmp_path.as_posix()}/runs/")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
