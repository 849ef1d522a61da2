"""``harness serve-policy``: usage errors are one line with exit status 2."""

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.entry import main

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args, message", [
    ([], "needs policy=NAME"),
    (["policy=vlaa"], "did you mean 'vla'"),
    (["policy=remote", "bogus"], "not key=value"),
    (["policy=remote", "colour=blue"], "unknown serve-policy option"),
    (["policy=vla", "policy.params.checkpoint=/nonexistent/ckpt"], "not a vla checkpoint"),
])
def test_usage_errors(capsys, args, message):
    if message == "not a vla checkpoint":
        pytest.importorskip("transformers", reason="the vla policy needs the `models` extra")
    assert main(["serve-policy", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_remote_policy_with_no_server_is_a_usage_error():
    # serving a remote policy is pointless but exercises the construction path: unreachable -> exit 2
    run = subprocess.run([sys.executable, "-m", "harness.cli", "serve-policy", "policy=remote",
                          "policy.params.url=ws://127.0.0.1:9", "policy.params.connect_retries=1"],
                         cwd=REPO, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 2, run.stderr
    assert "unreachable after 1 attempts" in run.stderr
