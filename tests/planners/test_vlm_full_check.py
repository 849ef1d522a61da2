"""The project's own ``vlm`` planner passes ``check_agent`` in full, identity check included,
on both backends: ``openai`` against a loopback server (replies a pure function of the
request, so runs repeat), and ``hf`` with the tiny random-weight checkpoint (slow).

``model`` (and the other fields naming a checkpoint) is declared ``via_identity``: the
backend's identity hashes what it names, so another model changes the run id and the check
accepts that; the declaration and the identity agree."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.params import fields_of
from harness.check.conformance import AGENT_CHECKS, check_agent
from tests.helpers import chat_completion, send_json

pytest.importorskip("openai", reason="the openai backend needs the `models` extra")


def _reply_for(body: dict) -> str:
    """A deterministic reply: a readable plan naming an action id, or unusable text."""
    digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).digest()
    if digest[0] % 3 == 0:
        return "I cannot tell from the image."
    return json.dumps({"visual_state_description": "a room", "reasoning_and_reflection": "look around",
                       "language_plan": "find it", "executable_plan": [
                           {"action_id": int(digest[1] % 20), "action_name": "find a Apple"}]})


@pytest.fixture
def loopback():
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            send_json(self, chat_completion(body.get("model", "m"), _reply_for(body),
                                            usage={"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}))

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd.server_port
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_model_is_declared_as_what_the_identity_hashes():
    from planners.plugin import HFParams, OpenAIParams, VLMOwnParams

    rules = {f.name: f.rule for p in (VLMOwnParams, HFParams, OpenAIParams) for f in fields_of(p)}
    for name in ("model", "adapter", "served_checkpoint"):
        assert rules[name].results and rules[name].via_identity, name


def test_vlm_on_openai_passes_check_agent_in_full(loopback):
    url = f"http://127.0.0.1:{loopback}/v1"
    report = check_agent(
        "vlm", "eb_alfred",
        agent_params={"backend": "openai", "model": "m", "base_url": url, "max_new_tokens": 64, "max_retries": 0,
                      "request_timeout_s": 20.0},
        suite_params={"generated_per_split": 4, "render": False}, episodes=2,
        # A second address of the same server: where the model is served is not in the identity.
        examples={"base_url": f"http://localhost:{loopback}/v1"})
    assert report.passed == list(AGENT_CHECKS)
    skipped = " ".join(report.skipped)
    assert "identity: model" not in skipped and "identity: base_url" not in skipped


@pytest.mark.slow
def test_vlm_on_hf_passes_check_agent_in_full(tiny_ckpts):
    report = check_agent("vlm", "eb_alfred", agent_params={"model": str(tiny_ckpts["base"]), "max_new_tokens": 16},
                         suite_params={"generated_per_split": 4, "render": False}, episodes=2,
                         # Real second checkpoints: the declared examples name none on this machine.
                         examples={"model": str(tiny_ckpts["qwen2"]), "adapter": str(tiny_ckpts["favor"])})
    assert report.passed == list(AGENT_CHECKS)
