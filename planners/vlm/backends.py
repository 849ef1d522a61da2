"""Model backends of the VLM planner: chat messages in, generated text out.

``hf``: any ``AutoModelForImageTextToText`` + ``AutoProcessor`` checkpoint,
in process. Every conversation waiting on the planner goes into one batched,
left-padded, greedy ``generate`` (up to ``batch_size`` per call), so N
parallel episodes cost about one forward pass per decoding step.

``openai``: any OpenAI-compatible chat-completions server (vLLM, SGLang,
lmdeploy, ``transformers serve``). Up to ``max_concurrency`` requests in
flight; retries with exponential backoff on 429 / 5xx / connection errors are the
``openai`` client's own (``max_retries``); each call, its retries included, ends by
``request_timeout_s`` of wall clock whatever the server does (a byte a second before or after
its headers included: planners/vlm/wallclock.py), raising ``CallTimedOut`` (a ``timeout``
record). A server that stays down raises out of ``generate``: the runner records the episodes
it served as agent errors, and a rerun resumes them. A reply
is read with a size limit and kept up to ``max_reply_chars`` characters, the cut
flagged (``Generation.output_truncated``; planners/vlm/reply_body.py).

Both take the output JSON schema of the suite's prompt with ``generate(...,
schema=...)`` when ``json_schema`` is on: ``hf`` constrains decoding to it with
xgrammar (the structured-generation library of vLLM and SGLang; a logits
processor that masks every token the schema's grammar does not allow), and
``openai`` sends it as ``response_format`` (``json_schema``), as EmbodiedBench
does for its local and most remote models (harness/promptkit/family.py).

Messages use the processor's convention: ``{"type": "image", "image": PIL}``
parts; the ``openai`` backend sends them as base64 PNG data URLs. A clip
(``{"type": "video", "video": harness.util.media.Clip}``) goes as each backend's
``video_form`` says (planners/vlm/video.py).

Their settings are declared in planners/plugin.py (``HFParams``, ``OpenAIParams``; plugins
``HF`` / ``OPENAI`` in the ``embodied_transfer.model_backends`` group); :func:`make_hf` and
:func:`make_openai` build them from the parsed settings. Their ``identity()`` holds derived
facts only (checkpoint hashes, the implementation in force); the settings enter the run
identity through the declarations.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import math
import os
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from planners.plugin import DEFAULT_MAX_NEW_TOKENS, DEFAULT_MAX_REPLY_CHARS, HFParams, OpenAIParams
from harness.util.checkpoint_identity import checkpoint_identity
from planners.vlm.reply_body import read_reply

log = logging.getLogger(__name__)
from planners.vlm.video import (HF_FORMS, OPENAI_FORMS, frames_as_images, has_video, hf_video_inputs,
                                openai_video_parts)

Messages = list[dict[str, Any]]


# --- hf -------------------------------------------------------------------------
class Generation(str):
    """A model's text carrying its call's token counts (``usage``: ``prompt_tokens``,
    ``output_tokens``); the runner copies them into the call's transcript. Any
    string operation on it gives a plain ``str``."""

    usage: dict[str, int]
    #: True when the backend kept only a prefix of what the model sent (``max_reply_chars``);
    #: the runner marks the call's transcript entry ``output_truncated``.
    output_truncated: bool = False

    def __new__(cls, text: str, prompt_tokens: int | None = None, output_tokens: int | None = None,
                output_truncated: bool = False) -> "Generation":
        obj = super().__new__(cls, text)
        obj.output_truncated = bool(output_truncated)
        # A count the server left out, or sent as NaN / Infinity / text, is unknown: left out of
        # ``usage`` (the transcript's cost columns stay empty), never an error that loses the text.
        obj.usage = {k: c for k, c in (("prompt_tokens", _token_count(prompt_tokens)),
                                       ("output_tokens", _token_count(output_tokens))) if c is not None}
        return obj


#: The largest token count taken as a count (2**53: exact as a float, fits SQLite's integer);
#: anything above it is not a count a server means.
MAX_TOKEN_COUNT = 2**53


def _token_count(value: Any) -> int | None:
    """``value`` as a token count, or None when it is missing, not a number (text, bool, list),
    not finite, not whole, negative or above :data:`MAX_TOKEN_COUNT` (a 400-digit integer
    would overflow every float conversion)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= MAX_TOKEN_COUNT else None
    if isinstance(value, float):
        if not math.isfinite(value) or value < 0 or value > MAX_TOKEN_COUNT or value != int(value):
            return None
        return int(value)
    return None


class HFBackend:
    """In-process batched greedy generation with a Hugging Face checkpoint (+ optional LoRA)."""

    name = "hf"

    def __init__(self, model: str, *, adapter: str | None = None, merge_adapter: bool = False,
                 dtype: str = "auto", device_map: str | None = None, attn_implementation: str | None = None,
                 max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, batch_size: int = 16,
                 trust_remote_code: bool = False, hash_weights: bool = False, json_schema: bool = False,
                 num_threads: int | str | None = "auto", video_form: str = "video") -> None:
        import torch

        self.model_path, self.adapter_path = model, adapter
        self.merge_adapter, self.dtype = bool(merge_adapter), str(dtype)
        self.max_new_tokens, self.batch_size = int(max_new_tokens), int(batch_size)
        self.json_schema = bool(json_schema)
        if self.json_schema:
            _require_xgrammar()
        self.video_form = _video_form(video_form, HF_FORMS)
        #: intra-op threads: "auto" = the cores this process has (planners/vlm/threads.py), less
        #: those of env worker processes once the run says how many (share_cores).
        self.num_threads = num_threads
        self.share_cores(0)
        self._grammar_compiler: Any = None
        self._grammars: dict[str, Any] = {}
        #: CPU defaults: padding-aware attention, so a batched prefill costs no more than
        #: one-by-one ones, and a KV cache written in place (transformers' StaticCache). On a GPU
        #: the reserved room (max_new_tokens per conversation) would cost memory for little gain.
        self._cpu_defaults = not attn_implementation and not device_map
        if self._cpu_defaults:
            from planners.vlm.attention import register

            attn_implementation = register()
        model_identity = checkpoint_identity(model, full=hash_weights)
        adapter_identity = checkpoint_identity(adapter, full=hash_weights) if adapter else None
        # Loaded once per process for every run with the same weights and loading settings
        # (an experiment's many runs of one checkpoint): keyed by the checkpoint's identity, not its path.
        key = json.dumps({"model": model_identity, "adapter": adapter_identity, "merge_adapter": self.merge_adapter,
                          "dtype": self.dtype, "device_map": device_map, "attn_implementation": attn_implementation,
                          "trust_remote_code": bool(trust_remote_code)}, sort_keys=True)
        loaded = LOADED.get(key, lambda: _load_hf(model, adapter, merge_adapter=self.merge_adapter, dtype=dtype,
                                                  device_map=device_map, attn_implementation=attn_implementation,
                                                  trust_remote_code=trust_remote_code))
        self.processor, self.model, self.device = loaded.processor, loaded.model, loaded.device
        self._torch = torch
        self._identity = {
            "backend": "hf",
            "model": model_identity,
            "adapter": adapter_identity,
            # In force: the CPU default when none is set (its own version), else the one set.
            "attn_implementation": attn_implementation or "default",
            "decoding": "greedy",
            "json_schema": self.json_schema,
            "guided_decoding": f"xgrammar=={_version('xgrammar')}" if self.json_schema else None,
        }
        if self.video_form != HF_FORMS[0]:  # only where set: runs without clips keep their identity
            self._identity["video_form"] = self.video_form
        #: generate() calls and conversations served (for benchmarks and tests).
        self.calls = 0
        self.served = 0

    def identity(self) -> Mapping[str, Any]:
        return self._identity

    def share_cores(self, env_workers: int) -> int:
        """Set torch's intra-op threads for a run with ``env_workers`` env worker processes
        beside the model (unless ``num_threads`` fixed them); returns the count in force."""
        from planners.vlm.threads import resolve_num_threads, set_torch_threads

        self.threads = set_torch_threads(resolve_num_threads(self.num_threads, env_workers))
        return self.threads

    def generate(self, conversations: Sequence[Messages], schema: Mapping[str, Any] | None = None) -> list[str]:
        """Greedy replies; constrained to ``schema`` when given and ``json_schema`` is on."""
        out: list[str] = []
        grammar = self._grammar(schema) if (schema is not None and self.json_schema) else None
        for start in range(0, len(conversations), self.batch_size):
            out += self._generate_batch(conversations[start:start + self.batch_size], grammar)
        return out

    def _grammar(self, schema: Mapping[str, Any]) -> Any:
        """The schema compiled for this tokenizer (once per schema)."""
        import json

        import xgrammar as xgr

        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            if self._grammar_compiler is None:
                tokenizer = getattr(self.processor, "tokenizer", self.processor)
                # The logits' width (may exceed len(tokenizer) by padding rows).
                vocab_size = self.model.get_output_embeddings().weight.shape[0]
                stops = self.model.generation_config.eos_token_id
                stops = [stops] if isinstance(stops, int) else list(stops or [])
                if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in stops:
                    stops.append(tokenizer.eos_token_id)
                info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size,
                                                          stop_token_ids=stops or None)
                self._grammar_compiler = xgr.GrammarCompiler(info)
            self._grammars[key] = self._grammar_compiler.compile_json_schema(key)
        return self._grammars[key]

    def _generate_batch(self, conversations: Sequence[Messages], grammar: Any = None) -> list[str]:
        torch = self._torch
        if has_video(conversations) and self.video_form == "frames":
            conversations = [frames_as_images(c) for c in conversations]
        if has_video(conversations):
            inputs = hf_video_inputs(self.processor, conversations)
        else:
            inputs = self.processor.apply_chat_template(
                list(conversations), add_generation_prompt=True, tokenize=True, return_dict=True,
                return_tensors="pt", processor_kwargs={"padding": True},
            )
        inputs = inputs.to(self.device)
        tokenizer = getattr(self.processor, "tokenizer", self.processor)
        extra: dict[str, Any] = {}
        if self._cpu_defaults:  # a cache written in place: no copy of the whole cache per new token
            extra["cache_implementation"] = "static"
        if grammar is not None:
            from transformers import LogitsProcessorList
            from xgrammar.contrib.hf import LogitsProcessor

            # One processor per generate call (it keeps one grammar matcher per row).
            extra["logits_processor"] = LogitsProcessorList([LogitsProcessor(grammar)])
        with torch.inference_mode():
            generated = self.model.generate(
                **inputs, do_sample=False, max_new_tokens=self.max_new_tokens,
                temperature=None, top_p=None, top_k=None, pad_token_id=tokenizer.pad_token_id,
                stopping_criteria=_stop_when_abandoned(), **extra,
            )
        new = generated[:, inputs["input_ids"].shape[1]:]
        self.calls += 1
        self.served += len(conversations)
        # Token counts: the prompt without its left padding; the new tokens up to the padding.
        prompt_tokens = inputs["attention_mask"].sum(dim=1).tolist()
        output_tokens = (new != tokenizer.pad_token_id).sum(dim=1).tolist()
        texts = tokenizer.batch_decode(new, skip_special_tokens=True)
        return [Generation(t.strip(), p, o) for t, p, o in zip(texts, prompt_tokens, output_tokens)]


@dataclass(frozen=True)
class LoadedModel:
    """A checkpoint in memory: its processor (left padding set) and its model (+ adapter), in eval mode."""

    processor: Any
    model: Any
    device: Any


def _load_hf(model: str, adapter: str | None, *, merge_adapter: bool, dtype: str, device_map: str | None,
             attn_implementation: str | None, trust_remote_code: bool) -> LoadedModel:
    from transformers import AutoModelForImageTextToText

    processor = load_processor(model, trust_remote_code=trust_remote_code)
    tokenizer = getattr(processor, "tokenizer", processor)
    tokenizer.padding_side = "left"  # decoder-only batching: new tokens line up at the right
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    kwargs: dict[str, Any] = {"dtype": _torch_dtype(dtype)}
    if device_map:
        kwargs["device_map"] = device_map
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    net = AutoModelForImageTextToText.from_pretrained(model, trust_remote_code=trust_remote_code, **kwargs)
    if adapter:
        from peft import PeftModel

        net = PeftModel.from_pretrained(net, adapter)
        if merge_adapter:
            net = net.merge_and_unload()
    net.eval()
    return LoadedModel(processor, net, next(net.parameters()).device)


class LoadedModels:
    """The checkpoints this process holds, most recently used last, at most ``keep`` of them.

    ``harness run`` builds one planner per run; an experiment's runs of one checkpoint (each
    variant's suites and splits, in that order: harness/tables/experiments.py) find it loaded. A
    different checkpoint first drops the least recently used one (``keep`` 1: one model's
    memory at a time; ``keep`` 0: nothing kept, every backend loads its own, the loading of
    before). ``loads`` counts the checkpoints actually loaded.
    """

    def __init__(self, keep: int = 1) -> None:
        self.keep = int(keep)
        self.loads = 0
        self._items: OrderedDict[str, LoadedModel] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, load: Any) -> LoadedModel:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            self._drop(max(0, self.keep - 1))  # room first: never two models' memory for one
            loaded = load()
            self.loads += 1
            if self.keep > 0:
                self._items[key] = loaded
            return loaded

    def clear(self) -> None:
        with self._lock:
            self._drop(0)

    def __len__(self) -> int:
        return len(self._items)

    def _drop(self, down_to: int) -> None:
        dropped = False
        while len(self._items) > down_to:
            self._items.popitem(last=False)
            dropped = True
        if dropped:
            import gc

            gc.collect()
            try:
                import torch

                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
            except ImportError:  # pragma: no cover - the hf backend needs torch
                pass


#: This process's loaded checkpoints (the ``hf`` backend's).
LOADED = LoadedModels(keep=1)


def _require_xgrammar() -> None:
    try:
        import xgrammar  # noqa: F401
    except ImportError as exc:
        raise ImportError("json_schema=true on the hf backend constrains decoding with xgrammar: install the "
                          "`models` extra (or set planner.params.json_schema=false)") from exc


def _video_form(value: str, forms: Sequence[str]) -> str:
    if value not in forms:
        raise ValueError(f"video_form must be one of {', '.join(forms)}, got {value!r}")
    return value


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


def _stop_when_abandoned() -> Any:
    """A stopping criterion that ends ``generate`` at the next token once the runner has
    abandoned this call after a timeout (``harness.run.calls.call_cancelled``): the abandoned
    thread leaves torch instead of generating on while the run goes on."""
    from transformers import StoppingCriteria, StoppingCriteriaList

    from harness.run.calls import call_cancelled

    class _Abandoned(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            import torch

            return torch.full((input_ids.shape[0],), call_cancelled(), dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([_Abandoned()])


def load_processor(path: str, *, trust_remote_code: bool = False) -> Any:
    """``AutoProcessor``; where that fails only because the video processor cannot load
    (no torchvision), the checkpoint's processor class without its video half."""
    from transformers import AutoProcessor

    try:
        return AutoProcessor.from_pretrained(path, trust_remote_code=trust_remote_code)
    except (OSError, ValueError, ImportError) as exc:
        text = str(exc).lower()
        # No torchvision: the video processor cannot load. Custom code not trusted: the
        # folder ships its own (image-only) processor class; use the stock one instead.
        if not any(k in text for k in ("video", "torchvision", "custom code")):
            raise
        first = exc
    return _image_only_processor(path, first)


def _image_only_processor(path: str, cause: BaseException) -> Any:
    import json
    from pathlib import Path

    import transformers
    from transformers import AutoImageProcessor, AutoTokenizer

    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES

    config = Path(path) / "config.json"
    model_type = json.loads(config.read_text()).get("model_type") if config.is_file() else None
    base = getattr(transformers, PROCESSOR_MAPPING_NAMES.get(model_type or "", "") or "", None)
    if base is None:
        raise cause
    chat_template = None
    tpl = Path(path) / "chat_template.jinja"
    if tpl.is_file():
        chat_template = tpl.read_text()

    def __init__(self: Any, image_processor: Any = None, tokenizer: Any = None, chat_template: Any = None,
                 **kwargs: Any) -> None:
        base.__init__(self, image_processor=image_processor, tokenizer=tokenizer, video_processor=None,
                      chat_template=chat_template, **kwargs)

    cls = type(f"ImageOnly{base.__name__}", (base,), {"__init__": __init__})
    processor = cls(image_processor=AutoImageProcessor.from_pretrained(path),
                    tokenizer=AutoTokenizer.from_pretrained(path), chat_template=chat_template)
    return processor


def _torch_dtype(name: str) -> Any:
    import torch

    if name in ("auto", None):
        return "auto"
    value = getattr(torch, str(name), None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown torch dtype {name!r} (e.g. auto, bfloat16, float16, float32)")
    return value


# --- openai ---------------------------------------------------------------------
class OpenAIBackend:
    """Chat completions on an OpenAI-compatible server, up to ``max_concurrency`` at once."""

    name = "openai"

    def __init__(self, model: str, *, base_url: str, api_key_env: str = "OPENAI_API_KEY",
                 max_concurrency: int = 8, request_timeout_s: float = 120.0, max_retries: int = 3,
                 max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, json_schema: bool = False,
                 served_checkpoint: str | None = None, hash_weights: bool = False,
                 max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS, video_form: str = "frames") -> None:
        from openai import OpenAI

        self.model, self.base_url = model, base_url
        self.max_reply_chars = int(max_reply_chars)
        self.max_new_tokens, self.json_schema = int(max_new_tokens), bool(json_schema)
        self.max_concurrency = int(max_concurrency)
        # A local server needs no key; the client insists on a non-empty one.
        api_key = os.environ.get(api_key_env) or "EMPTY"
        from harness.params import register_secrets
        from planners.plugin import OpenAIParams

        # Declared secret (planners/plugin.py): the key the variable holds and the credentials of
        # the URL (``http://user:pw@host/v1``, sent as a Basic auth header) are never stored nor
        # printed, whoever builds the backend (the plugin parses its params; tests build it directly).
        register_secrets(OpenAIParams, {"base_url": base_url, "api_key_env": api_key_env})
        from planners.vlm.wallclock import env_proxy, http_client, network_backend

        # Each call ends by its wall-clock limit whatever the server does (planners/vlm/wallclock.py).
        self.request_timeout_s = float(request_timeout_s)
        self._network = network_backend()
        self.client = OpenAI(base_url=base_url, api_key=api_key, timeout=self.request_timeout_s,
                             max_retries=int(max_retries),
                             http_client=http_client(self._network, env_proxy(base_url)))
        self._pool = ThreadPoolExecutor(max_workers=self.max_concurrency, thread_name_prefix="vlm-openai")
        self._identity = {
            "backend": "openai",
            "model": model,
            # Where the model is served: two servers holding different weights under one
            # model name must not give one run id (the URL's path and credentials are not in it).
            "server": server_address(base_url),
            # What the server says it serves under that name (vLLM's /v1/models ``root``: the
            # weights' path), where it answers; None where it does not.
            "served_model": self._served_model(),
            # The served weights, when the user names them: the model name alone says
            # nothing about which checkpoint a server holds.
            "served_checkpoint": checkpoint_identity(served_checkpoint, full=hash_weights),
            "json_schema": self.json_schema,
            "decoding": "greedy",
        }
        self.video_form = _video_form(video_form, OPENAI_FORMS)
        if self.video_form != OPENAI_FORMS[0]:  # only where set: runs without clips keep their identity
            self._identity["video_form"] = self.video_form
        self.calls = 0
        self._count_lock = threading.Lock()

    def identity(self) -> Mapping[str, Any]:
        return self._identity

    def _served_model(self) -> Any:
        """What the server reports about the weights it serves under ``model``, or None when it
        does not answer ``GET /models``.

        From the listing entry: ``id``, and where given ``root`` and ``parent``. vLLM lists a base
        model with ``root`` = the weights' path and a LoRA adapter with ``root`` = the adapter's
        path and ``parent`` = its base model (vllm-project/vllm@00153c8,
        vllm/entrypoints/openai/models/serving.py, both ``show_available_models``); lmdeploy
        gives ``root`` = the model name (InternLM/lmdeploy@1263d5c,
        lmdeploy/serve/openai/endpoints/models.py:16-25); SGLang's ``root`` is the served name;
        ``transformers serve`` lists ids only. ``max_model_len`` and ``created`` are left out:
        they do not say which weights answer.

        A listing entry owned by ``sglang`` is followed by SGLang's own model report
        (``/model_info``, or ``/get_model_info`` on older servers, at the server's root): its
        ``model_path`` (the weights' path, whatever ``--served-model-name`` says) and
        ``weight_version`` (set by ``--weight-version`` and by weight updates;
        sgl-project/sglang@9c0549b, python/sglang/srt/entrypoints/http_server.py,
        ``model_info``). Servers that report none of these keep the identity they had."""
        from planners.vlm.reply_body import ListingTooLarge, read_listing
        from planners.vlm.wallclock import deadline

        # The whole exchange is bounded: connect and read by the wall clock, the body by its bytes
        # (read as a stream, never whole) and the parse by its entries (planners/vlm/reply_body.py).
        client = self.client.with_options(timeout=SERVED_MODEL_TIMEOUT_S, max_retries=0)
        try:
            with deadline(SERVED_MODEL_TIMEOUT_S):  # wall clock: a server dripping bytes waits no longer
                with client.models.with_streaming_response.list() as response:
                    entries = read_listing(response.iter_bytes())
        except ListingTooLarge as exc:
            from harness.util.redact import redact_text

            log.warning("model server %s: its model listing (GET /models) has %s; not read: the run identity "
                        "names no served weights (served_model: null)", redact_text(self.base_url), exc)
            return None
        except Exception:  # noqa: BLE001 - any failure: the server does not say (not an error)
            return None
        named = [e for e in entries if e.get("id") == self.model]
        entry = named[0] if named else (entries[0] if len(entries) == 1 else None)
        if entry is None or not isinstance(entry.get("id"), str):
            return None
        out = {"id": str(entry["id"])}
        for key in SERVED_MODEL_FIELDS:
            value = entry.get(key)
            if isinstance(value, str) and value:
                out[key] = value
        if entry.get("owned_by") == "sglang":
            out.update(self._sglang_model_info())
        from harness.util.redact import redact

        return redact(out)

    def _sglang_model_info(self) -> dict[str, str]:
        """SGLang's ``model_path`` and ``weight_version`` (empty where it does not answer)."""
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(self.base_url)
        root_path = parts.path.rstrip("/")
        root_path = root_path[: -len("/v1")] if root_path.endswith("/v1") else root_path
        from planners.vlm.wallclock import deadline

        client = self.client.with_options(timeout=SERVED_MODEL_TIMEOUT_S, max_retries=0)
        for endpoint in ("/model_info", "/get_model_info"):
            url = urlunsplit((parts.scheme, parts.netloc, root_path + endpoint, "", ""))
            try:
                with deadline(SERVED_MODEL_TIMEOUT_S):
                    info = client.get(url, cast_to=object)
            except Exception:  # noqa: BLE001 - an older or a proxied server: try the next name
                continue
            if isinstance(info, dict):
                return {key: info[key] for key in SGLANG_INFO_FIELDS
                        if isinstance(info.get(key), str) and info[key]}
        return {}

    def generate(self, conversations: Sequence[Messages], schema: Mapping[str, Any] | None = None) -> list[str]:
        """Replies; ``schema`` goes out as ``response_format`` when ``json_schema`` is on."""
        with self._count_lock:  # calls come from several threads (max_concurrent_calls)
            self.calls += 1
        schema = schema if self.json_schema else None
        return list(self._pool.map(lambda m: self._complete(m, schema), conversations))

    def _complete(self, messages: Messages, schema: Mapping[str, Any] | None = None) -> str:
        kwargs: dict[str, Any] = {}
        if schema is not None:
            # EmbodiedBench planner/remote_model.py:166-168: name 'embodied_planning', no "strict".
            kwargs["response_format"] = {
                "type": "json_schema", "json_schema": {"name": "embodied_planning", "schema": dict(schema)},
            }
        # The body as a stream of chunks (the client's own streaming read: same request, same
        # retries and timeouts), read up to a size limit (planners/vlm/reply_body.py): a server
        # answering hundreds of MB costs about max_reply_chars bytes, not the whole body.
        # The whole call, its retries included, ends by request_timeout_s of wall clock
        # (planners/vlm/wallclock.py): a server that drips bytes cannot hold it longer.
        import time

        from planners.vlm.wallclock import CallTimedOut, deadline

        sent = to_openai_messages(messages, self.video_form)
        at = time.monotonic() + self.request_timeout_s
        try:
            with deadline(self.request_timeout_s):
                with self.client.chat.completions.with_streaming_response.create(
                    model=self.model, messages=sent, temperature=0.0, max_tokens=self.max_new_tokens, **kwargs,
                ) as response:
                    reply = read_reply(response.iter_bytes(), self.max_reply_chars)
        except Exception as exc:
            if self._network.aborted:
                raise CallTimedOut("the call was aborted: the command is stopping") from None
            if time.monotonic() >= at:
                raise CallTimedOut(f"no complete reply within request_timeout_s={self.request_timeout_s:g} s "
                                   f"of wall clock ({type(exc).__name__})") from None
            from harness.util.redact import redact_exception

            raise redact_exception(exc)  # a 401 body naming the key: redacted before anyone reads or cuts it
        return Generation(reply.text, reply.prompt_tokens, reply.completion_tokens,
                          output_truncated=reply.truncated)

    def close(self) -> None:
        """Stop: queued calls are dropped and calls in flight end at once (their sockets shut)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._network.abort()


#: Seconds the openai backend waits for the server's model listing (run identity) at start.
SERVED_MODEL_TIMEOUT_S = 10.0
#: Fields of a ``GET /models`` entry that say which weights answer under the model name.
SERVED_MODEL_FIELDS = ("root", "parent")
#: Fields of SGLang's model report that say which weights it serves.
SGLANG_INFO_FIELDS = ("model_path", "weight_version")


def server_address(base_url: str) -> str:
    """``host:port`` of a base URL (the scheme's port where none is given; host lower-cased)."""
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    try:
        port = parts.port
    except ValueError:
        port = None
    port = port or (443 if parts.scheme == "https" else 80)
    host = (parts.hostname or "").lower()
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def make_hf(model: str, params: HFParams, *, max_new_tokens: int, json_schema: bool,
            hash_weights: bool) -> HFBackend:
    """The ``hf`` backend plugin's factory."""
    return HFBackend(model, adapter=params.adapter, merge_adapter=params.merge_adapter, dtype=params.dtype,
                     device_map=params.device_map, attn_implementation=params.attn_implementation,
                     max_new_tokens=max_new_tokens, batch_size=params.batch_size,
                     trust_remote_code=params.trust_remote_code, hash_weights=hash_weights, json_schema=json_schema,
                     num_threads=params.num_threads, video_form=params.video_form)


def make_openai(model: str, params: OpenAIParams, *, max_new_tokens: int, json_schema: bool,
                hash_weights: bool) -> OpenAIBackend:
    """The ``openai`` backend plugin's factory."""
    return OpenAIBackend(model, base_url=params.base_url or "", api_key_env=params.api_key_env,
                         max_concurrency=params.max_concurrency, request_timeout_s=params.request_timeout_s,
                         max_retries=params.max_retries, max_new_tokens=max_new_tokens, json_schema=json_schema,
                         served_checkpoint=params.served_checkpoint, hash_weights=hash_weights,
                         max_reply_chars=params.max_reply_chars, video_form=params.video_form)


def to_openai_messages(messages: Messages, video_form: str = "frames") -> list[dict[str, Any]]:
    """Processor-style messages -> OpenAI chat messages (images as base64 PNG data URLs, clips in
    ``video_form``: planners/vlm/video.py)."""
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            out.append({"role": m["role"], "content": content})
            continue
        parts = []
        for part in content:
            if part.get("type") == "image":
                parts.append({"type": "image_url", "image_url": {"url": png_data_url(part["image"])}})
            elif part.get("type") == "video":
                parts += openai_video_parts(part["video"], video_form, png_data_url)
            else:
                parts.append({"type": "text", "text": part["text"]})
        out.append({"role": m["role"], "content": parts})
    return out


def png_data_url(image: Any) -> str:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
