"""The ``openai`` backend against a real OpenAI-compatible server: ``transformers serve``
serving the tiny checkpoint on 127.0.0.1 (started and stopped by the test, by PID)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import eb_alfred_requests

from envs.eb_alfred.suite import EBAlfredSuite
from harness.interfaces import AgentReply
from harness.run.runner import Runner
from harness.store import ResultStore
from harness.types import RunSpec

pytest.importorskip("openai", reason="the openai backend needs the `models` extra")
pytest.importorskip("fastapi", reason="`transformers serve` needs transformers[serving]")

FAST = dict(max_new_tokens=4, num_examples=0, image_size=112, request_timeout_s=20.0, max_retries=1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``transformers serve CKPT`` on 127.0.0.1:port."""

    def __init__(self, ckpt: Path, port: int, log: Path):
        self.ckpt, self.port, self.log = ckpt, port, log
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 180.0) -> "Server":
        exe = shutil.which("transformers", path=str(Path(sys.executable).parent)) or shutil.which("transformers")
        assert exe, "the `transformers` CLI is not installed"
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        self.proc = subprocess.Popen(
            [exe, "serve", str(self.ckpt), "--host", "127.0.0.1", "--port", str(self.port), "--device", "cpu",
             "--trust-remote-code"],
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as resp:
                    if resp.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"transformers serve not up after {timeout_s}s: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: the server and its children
            self.proc.wait(timeout=30)
        self.proc = None


@pytest.fixture
def server(tiny_ckpts: dict[str, Path], tmp_path: Path):
    srv = Server(tiny_ckpts["base"], _free_port(), tmp_path / "serve.log").start()
    try:
        yield srv
    finally:
        srv.stop()




@pytest.mark.slow
@pytest.mark.ci
def test_openai_backend_against_transformers_serve(server: Server, tiny_ckpts: dict[str, Path]) -> None:
    from openai import OpenAI

    from planners.vlm.backends import png_data_url
    from planners.vlm.planner import VLMPlanner
    from envs.eb_alfred.prompt import to_pil

    model = str(tiny_ckpts["base"])
    planner = VLMPlanner(suite="eb_alfred", backend="openai", model=model, base_url=server.base_url, max_concurrency=2,
                         served_checkpoint=model, **FAST)
    replies = planner.act(eb_alfred_requests(2))
    assert len(replies) == 2
    for reply in replies:
        assert isinstance(reply, AgentReply) and isinstance(reply.raw_output, str)
        assert (reply.output_error is None) or (list(reply.actions) == [])
    ident = planner.identity()["backend"]
    assert ident["backend"] == "openai" and ident["served_checkpoint"]["sha256"]
    # The image travels as a base64 PNG data URL and the server counts its tokens.
    client = OpenAI(base_url=server.base_url, api_key="EMPTY")
    image = to_pil(eb_alfred_requests(1)[0].observation["image"], 112)

    def prompt_tokens(with_image: bool) -> int:
        content = [{"type": "text", "text": "find a Apple"}]
        if with_image:
            content.insert(0, {"type": "image_url", "image_url": {"url": png_data_url(image)}})
        resp = client.chat.completions.create(model=model, messages=[{"role": "user", "content": content}],
                                              max_tokens=1, temperature=0.0)
        return resp.usage.prompt_tokens

    assert prompt_tokens(True) > prompt_tokens(False)


@pytest.mark.slow
@pytest.mark.ci
def test_server_killed_mid_run_gives_error_records_and_rerun_resumes(
        server: Server, tiny_ckpts: dict[str, Path], tmp_path: Path) -> None:
    from planners.vlm.planner import VLMPlanner

    suite = EBAlfredSuite(render=True, generated_per_split=3)
    spec = RunSpec(suite=suite.name, split="seen", agent="vlm", variant="base", limit=3, batch_size=1)
    model = str(tiny_ckpts["base"])

    def planner() -> VLMPlanner:
        return VLMPlanner(suite="eb_alfred", backend="openai", model=model, base_url=server.base_url, **FAST)

    def kill_after_first(record) -> None:
        server.stop()  # the server dies after the first episode; the run must not hang or crash

    store = ResultStore(tmp_path / "out")
    first = Runner(spec, suite, planner(), store, on_record=kill_after_first).run()
    store.close()
    assert first.finished == 3
    kinds = [r.error_kind for r in first.records]
    assert kinds[0] is None and kinds[1:] == ["agent", "agent"], kinds
    assert all("Connection" in (r.error_message or "") for r in first.records[1:])

    server.start()
    store = ResultStore(tmp_path / "out")
    second = Runner(spec, suite, planner(), store).run()
    store.close()
    assert second.skipped == 1 and second.finished == 2  # only the error records are run again
    assert [r.error_kind for r in second.records] == [None, None]
    assert second.run_id == first.run_id
