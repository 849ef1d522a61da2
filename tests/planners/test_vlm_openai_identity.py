"""The openai backend's run identity says where the model is served: the base URL's host and
port, and what the server's ``GET /models`` lists under the model name (vLLM's ``root``), so
two servers serving different weights under one name give two run ids."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.helpers import send_json

pytest.importorskip("openai", reason="the openai backend needs the `models` extra")

from planners.vlm.backends import OpenAIBackend, server_address  # noqa: E402


def serve(models: list[dict] | None):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            if models is None or not self.path.endswith("/models"):
                self.send_response(404)
                self.end_headers()
                return
            send_json(self, {"object": "list", "data": models})

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def identity(port: int, path: str = "/v1") -> dict:
    backend = OpenAIBackend("m", base_url=f"http://127.0.0.1:{port}{path}", max_retries=0)
    try:
        return dict(backend.identity())
    finally:
        backend.close()


def test_the_server_and_what_it_serves_are_in_the_identity():
    a = serve([{"id": "m", "object": "model", "owned_by": "vllm", "root": "/ckpts/base"}])
    b = serve([{"id": "m", "object": "model", "owned_by": "vllm", "root": "/ckpts/favor"}])
    silent = serve(None)
    try:
        ia, ib, isilent = identity(a.server_port), identity(b.server_port), identity(silent.server_port)
        assert ia["server"] == f"127.0.0.1:{a.server_port}"
        assert ia["served_model"] == {"id": "m", "root": "/ckpts/base"}
        assert ib["served_model"] == {"id": "m", "root": "/ckpts/favor"}
        assert isilent["served_model"] is None and isilent["server"] == f"127.0.0.1:{silent.server_port}"
        assert ia != ib
        # the path of the base URL is not in it
        assert identity(a.server_port, "/v1/") == ia
    finally:
        for httpd in (a, b, silent):
            httpd.shutdown()


def test_server_address():
    assert server_address("http://Host.Example/v1") == "host.example:80"
    assert server_address("https://user:pw@host.example/v1") == "host.example:443"
    assert server_address("http://[::1]:8000/v1") == "[::1]:8000"


# Listing and model-report shapes as the real servers write them (field names and defaults):
# vLLM: ModelCard (vllm/entrypoints/openai/engine/protocol.py) filled by show_available_models
#   (vllm/entrypoints/openai/models/serving.py): a base model with root = weights' path and
#   max_model_len, a LoRA adapter with root = adapter path and parent = base model name.
VLLM_BASE = {"id": "base", "object": "model", "created": 1767000000, "owned_by": "vllm",
             "root": "/ckpts/Qwen2.5-VL-7B-Instruct", "parent": None, "max_model_len": 32768,
             "permission": [{"id": "modelperm-1", "object": "model_permission", "allow_sampling": True}]}
VLLM_LORA = {"id": "favor_sft", "object": "model", "created": 1767000000, "owned_by": "vllm",
             "root": "/ckpts/favor_sft_lora", "parent": "base", "max_model_len": None, "permission": []}
# SGLang: ModelCard (python/sglang/srt/entrypoints/openai/protocol.py): id and root are the served
#   name; /model_info (python/sglang/srt/entrypoints/http_server.py) reports model_path and
#   weight_version (ServerArgs default "default").
SGLANG_CARD = {"id": "base", "object": "model", "created": 1767000000, "owned_by": "sglang",
               "root": "base", "max_model_len": 32768}
SGLANG_INFO = {"model_path": "/ckpts/Qwen2.5-VL-7B-Instruct", "tokenizer_path": "/ckpts/Qwen2.5-VL-7B-Instruct",
               "is_generation": True, "preferred_sampling_params": None, "weight_version": "default",
               "has_image_understanding": True, "has_audio_understanding": False,
               "model_type": "qwen2_5_vl", "architectures": ["Qwen2_5_VLForConditionalGeneration"]}
# lmdeploy: ModelCard (lmdeploy/serve/openai/protocol.py) with root = the model name.
LMDEPLOY_CARD = {"id": "base", "object": "model", "created": 1767000000, "owned_by": "lmdeploy",
                 "root": "base", "parent": None, "permission": [{"id": "modelperm-1"}]}
# transformers serve: ids only (src/transformers/commands/serving.py, get_gen_models).
TRANSFORMERS_CARD = {"id": "base", "object": "model", "created": 1767000000.5, "owned_by": "Qwen"}


def serve_routes(routes: dict[str, dict]):
    """A loopback server answering GET for exactly these paths (404 elsewhere); it counts hits."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            hits.append(self.path)
            if self.path not in routes:
                self.send_response(404)
                self.end_headers()
                return
            send_json(self, routes[self.path])

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.hits = hits
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def served(routes: dict[str, dict], model: str = "base") -> tuple[dict, list[str]]:
    httpd = serve_routes(routes)
    try:
        backend = OpenAIBackend(model, base_url=f"http://127.0.0.1:{httpd.server_port}/v1", max_retries=0)
        try:
            return backend.identity()["served_model"], httpd.hits
        finally:
            backend.close()
    finally:
        httpd.shutdown()


def listing(*cards):
    return {"/v1/models": {"object": "list", "data": list(cards)}}


def test_vllm_base_and_lora_cards():
    base, _ = served(listing(VLLM_BASE, VLLM_LORA), "base")
    assert base == {"id": "base", "root": "/ckpts/Qwen2.5-VL-7B-Instruct"}  # max_model_len: not the weights
    lora, _ = served(listing(VLLM_BASE, VLLM_LORA), "favor_sft")
    assert lora == {"id": "favor_sft", "root": "/ckpts/favor_sft_lora", "parent": "base"}
    # the same adapter path over another base model: another identity
    other = dict(VLLM_LORA, parent="base2")
    assert served(listing(VLLM_BASE, other), "favor_sft")[0] != lora


def test_sglang_reports_its_weights_path_and_version():
    routes = {**listing(SGLANG_CARD), "/model_info": SGLANG_INFO}
    ident, hits = served(routes)
    assert ident == {"id": "base", "root": "base", "model_path": "/ckpts/Qwen2.5-VL-7B-Instruct",
                     "weight_version": "default"}
    assert "/model_info" in hits
    updated = {**routes, "/model_info": dict(SGLANG_INFO, weight_version="step-200")}
    assert served(updated)[0]["weight_version"] == "step-200"
    # an older SGLang with only /get_model_info
    older = {**listing(SGLANG_CARD), "/get_model_info": SGLANG_INFO}
    assert served(older)[0] == ident
    # an SGLang behind a proxy that answers neither: the listing's fields only
    assert served(listing(SGLANG_CARD))[0] == {"id": "base", "root": "base"}


def test_servers_that_report_no_fingerprint_keep_their_identity():
    # lmdeploy and transformers serve: the same served_model as before these fields, and no
    # request beyond the listing (only an sglang-owned entry asks for /model_info)
    lm, lm_hits = served(listing(LMDEPLOY_CARD))
    assert lm == {"id": "base", "root": "base"} and lm_hits == ["/v1/models"]
    tf, tf_hits = served(listing(TRANSFORMERS_CARD))
    assert tf == {"id": "base"} and tf_hits == ["/v1/models"]
