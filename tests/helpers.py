"""Small helpers shared by several test modules."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from pathlib import Path


def committed_rows(db: Path, table: str = "episodes") -> int:
    """Rows of ``table`` committed to a store file, read through a read-only connection
    (0 before the file or its schema exists)."""
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        finally:
            con.close()
    except sqlite3.DatabaseError:  # not there yet, or a file being written
        return 0


def process_group_alive(pgid: int) -> bool:
    """Whether any process of the process group ``pgid`` still lives."""
    import os

    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def wait_at_gate(proc: subprocess.Popen, gate: Path, db: Path, rows: int, timeout: float = 300) -> None:
    """Wait until a run of ``tests/harness/gated_cli.py`` is held at its gate (``gate/blocked``
    exists) with at least ``rows`` episodes committed to ``db``; fail if it ends or times out."""
    deadline = time.monotonic() + timeout
    while not ((gate / "blocked").exists() and committed_rows(db) >= rows):
        if proc.poll() is not None:
            raise AssertionError(f"the gated run ended before reaching the gate: {proc.communicate()[1][-3000:]}")
        assert time.monotonic() < deadline, "the gated run never reached the gate"
        time.sleep(0.02)


def eb_alfred_requests(n: int) -> list:
    """Agent requests at the first step of ``n`` generated EB-ALFRED episodes (images rendered)."""
    from envs.eb_alfred.suite import EBAlfredSuite
    from harness.interfaces import AgentRequest

    suite = EBAlfredSuite(render=True, generated_per_split=n)
    env = suite.make_env()
    out = []
    for spec in suite.episodes("seen")[:n]:
        obs, info = env.reset(seed=spec.seed, options={"episode": spec})
        out.append(AgentRequest(spec, obs, info))
    return out


def chat_completion(model: str, content: str, **extra: object) -> dict:
    """An OpenAI chat-completion response body with one choice (``extra``: e.g. ``usage``)."""
    return {"id": "x", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            **extra}


def send_json(handler, payload: object) -> None:
    """Answer an ``http.server`` request with ``payload`` as JSON (status 200)."""
    import json

    data = json.dumps(payload).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def require_example_plugin() -> None:
    """Skip (fail under ``REQUIRE_EXAMPLE_PLUGIN=1``, as .ci/run sets) unless the example plugin
    package (examples/plugin_suite) is installed: its suite ``example`` is registered only then."""
    import importlib.metadata
    import os

    import pytest

    try:
        importlib.metadata.distribution("embodied-transfer-example-suite")
    except importlib.metadata.PackageNotFoundError:
        reason = "the example plugin is not installed (pip install -e examples/plugin_suite)"
        if os.environ.get("REQUIRE_EXAMPLE_PLUGIN") == "1":
            pytest.fail(f"{reason}; REQUIRE_EXAMPLE_PLUGIN=1", pytrace=False)
        pytest.skip(reason)


def fallback_oracle(suite: str = "eb_alfred"):
    """The oracle's plans sent as fallback actions: every reply an output error ("no plan", raw
    output "prose") that still carries the oracle's actions."""
    from harness.registry.catalog import PLANNERS
    from harness.interfaces import AgentReply

    oracle = PLANNERS.build("oracle", suite=suite)

    class Fallback:
        name, privileged = oracle.name, oracle.privileged

        def identity(self):
            return oracle.identity()

        def reset(self, episode):
            oracle.reset(episode)

        def act(self, requests):
            return [AgentReply(actions=list(p), raw_output="prose", output_error="no plan")
                    for p in oracle.act(requests)]

    return Fallback()


def serve_chat_reply(content: str):
    """A loopback OpenAI-compatible server (a started ``ThreadingHTTPServer`` on 127.0.0.1, any
    port) whose every chat completion answers ``content``."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            send_json(self, chat_completion("m", content))

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


#: The modules whose presence means an optional extra is installed (pyproject.toml).
EXTRA_MODULES = {"models": ("torch", "transformers", "openai"), "eb_manipulation": ("robosuite", "mujoco"),
                 "video": ("av",)}


def require_extras(*extras: str) -> None:
    """Skip, naming the extra and how to install it, unless every extra named is installed (its
    modules are found; nothing is imported): a test of what a full install does, in the README's
    `.[dev]` install."""
    import importlib.util

    import pytest

    for extra in extras:
        missing = [m for m in EXTRA_MODULES[extra] if importlib.util.find_spec(m) is None]
        if missing:
            pytest.skip(f"needs the `{extra}` extra (pip install -e '.[{extra}]'): {', '.join(missing)} not installed")
