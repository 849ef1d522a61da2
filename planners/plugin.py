"""The planners that serve every suite whose actions they produce, and the ``vlm`` planner's
model backends: declarations only (imports nothing heavy). Each suite's own oracle and random
agent are in its envs package; each suite's prompt for the ``vlm`` planner too
(``SuitePlugin.prompt`` / ``prompt_params``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from harness.params import Composite, Group, ParamError, Parsed, convert, fields_of, param
from harness.plugins import AgentPlugin, BackendPlugin


@dataclass
class RandomParams:
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the draws (with each episode's key)")


RANDOM = AgentPlugin(
    name="random", target="planners.random_planner:RandomPlanner", params=RandomParams,
    summary="one uniformly random action of the observation's action list per call")


# --- vlm: the planner's own settings ------------------------------------------------------
#: auto: the model family's choice (harness/promptkit/family.py, docs/models.md).
AUTO_FLAG = ("auto", "true", "false")
#: EmbodiedBench planner/remote_model.py: ``max_tokens=2048``.
DEFAULT_MAX_NEW_TOKENS = 2048
#: The ``openai`` backend keeps at most this many characters of a reply: far above any real
#: answer (2,048 tokens decode to at most 131,072 characters, harness.promptkit.prompting.max_output_chars).
DEFAULT_MAX_REPLY_CHARS = 1_000_000


def _known_backend(name: str) -> str:
    from harness.registry.catalog import BACKENDS

    if name not in BACKENDS.names():
        raise ValueError(f"must be one of {', '.join(BACKENDS.names())}")
    return name


@dataclass
class VLMOwnParams:
    """What the ``vlm`` planner itself takes, whatever the backend and the suite."""

    backend: str = param("hf", check=_known_backend, example="openai",
                         help="hf: the model in process (extra `models`); openai: an OpenAI-compatible server")
    model: Optional[str] = param(
        None, via_identity=True, example="other-model",
        help="required. hf: a checkpoint folder or Hub id; openai: the served model name. The backend's identity "
             "of it (the checkpoint's hash, the served name) is in the run identity, not the path")
    json_schema: Optional[str] = param(
        "auto", choices=AUTO_FLAG,
        help="constrain the reply to the suite's output JSON schema (hf: guided decoding with xgrammar; openai: "
             "response_format); auto (or null): EmbodiedBench's rule per model family")
    max_new_tokens: int = param(DEFAULT_MAX_NEW_TOKENS, ge=1, le=1_000_000,
                                help="longest reply in tokens (EmbodiedBench planner/remote_model.py max_tokens)")
    hash_weights: bool = param(False, via_identity=True,
                               help="hash every weight byte instead of headers and samples; results do not change, "
                                    "but the hash taken is in the run identity (the backend's), so a run with the "
                                    "other mode is another run")

    def __post_init__(self) -> None:
        if not self.model:
            raise ParamError("model", "is required: the vlm planner needs model=<checkpoint path or served model name>")


# --- vlm: the model backends ------------------------------------------------------------
DTYPES = ("auto", "bfloat16", "float16", "float32", "float64")


def _threads(value: Any) -> Any:
    """``auto`` or a whole number >= 1 (as an int)."""
    if isinstance(value, str) and value.strip() == "auto":
        return "auto"
    if isinstance(value, bool):
        raise ValueError("must be 'auto' or a whole number >= 1")
    try:
        count = int(value) if isinstance(value, (int, str)) else None
    except ValueError:
        count = None
    if count is None or count < 1:
        raise ValueError("must be 'auto' or a whole number >= 1")
    return count


@dataclass
class HFParams:
    """The ``hf`` backend (planners/vlm/backends.py): the model in this process.

    No ``max_reply_chars`` here: a reply generated in process is at most ``max_new_tokens``
    tokens, so its length (at most 64 characters a token, harness.promptkit.prompting) and the memory
    it takes are bounded by decoding itself; nothing arrives that could be larger.
    """

    adapter: Optional[str] = param(
        None, via_identity=True, example="other-adapter",
        help="a PEFT LoRA adapter folder (or Hub id) loaded on `model`; its hash is in the run identity, not the path")
    merge_adapter: bool = param(False, help="merge the adapter into the weights after loading (other float rounding)")
    dtype: str = param("auto", choices=DTYPES, help="the weights' precision; auto: the checkpoint's")
    device_map: Optional[str] = param(
        None, via_identity=True, example="cpu",
        help="where the weights go, e.g. auto, cuda:0 (null: CPU); placement, like the executor, is not in the run "
             "identity (the attention implementation in force, which it selects, is)")
    attn_implementation: Optional[str] = param(
        None, via_identity=True, example="eager",
        help="e.g. sdpa, flash_attention_2, eager (null: padding-aware attention on CPU, the library's default "
             "elsewhere); the implementation in force is in the run identity through the backend's identity")
    batch_size: int = param(16, ge=1, le=100_000, results=False,
                            help="most conversations per generate call (speed: batched greedy decoding equals "
                                 "one-by-one, tests/planners/test_vlm_hf.py)")
    trust_remote_code: bool = param(False, help="run the checkpoint's own model / processor code")
    num_threads: str = param("auto", check=_threads, results=False, example=2,
                             help="torch intra-op threads: 'auto' (this process's cores less one per env worker "
                                  "process, planners/vlm/threads.py) or a whole number >= 1; speed only")
    video_form: str = param(
        "video", choices=("video", "frames"), via_identity=True, example="frames",
        help="how a prompt's video clip reaches the model: video (the checkpoint's own video processor, the "
             "frames as sampled) or frames (each frame an image); another than the default is in the run identity "
             "through the backend's identity (planners/vlm/video.py)")


@dataclass
class OpenAIParams:
    """The ``openai`` backend (planners/vlm/backends.py): a chat-completions server."""

    base_url: Optional[str] = param(
        None, kind="url", via_identity=True, example="http://127.0.0.1:8001/v1",
        help="the server, e.g. http://127.0.0.1:8000/v1; its host and port are in the run identity (as "
             "`server`, with what the server's /models says it serves under the model name), its path and "
             "credentials are not")
    api_key_env: str = param("OPENAI_API_KEY", results=False, example="OTHER_KEY", secret="env",
                             help="the environment variable holding the API key (a local server needs none)")
    max_concurrency: int = param(8, ge=1, le=4096, results=False, help="requests in flight (speed only)")
    request_timeout_s: float = param(120.0, gt=0, le=86_400, results=False,
                                     help="seconds of wall clock one call may take, its retries included; a server "
                                          "that drips bytes cannot hold it longer (transport only)")
    max_retries: int = param(3, ge=0, le=100, results=False,
                             help="retries with backoff on 429 / 5xx / connection errors (transport only)")
    served_checkpoint: Optional[str] = param(
        None, via_identity=True, example="other-checkpoint",
        help="local folder of the served weights: its hash is in the run identity (the model name alone does not "
             "say which weights a server holds)")
    max_reply_chars: int = param(
        DEFAULT_MAX_REPLY_CHARS, ge=1, le=10**12,
        help="most characters kept of a reply; the body is read only that far (at most 12 bytes a character, "
             "plus 64 KiB), so memory stays bounded. A longer reply keeps its first max_reply_chars characters, "
             "marked output_truncated in the transcript; the parser reads the prefix")
    video_form: str = param(
        "frames", choices=("frames", "video_jpeg"), via_identity=True, example="video_jpeg",
        help="how a prompt's video clip is sent: frames (an image_url part per frame: vLLM, SGLang, any multi-image "
             "server) or video_jpeg (one video_url of JPEG frames: vLLM); another than the default is in the run "
             "identity through the backend's identity (planners/vlm/video.py)")

    def __post_init__(self) -> None:
        if not self.base_url:
            raise ParamError("base_url", "is required: the openai backend needs base_url "
                                         "(e.g. http://127.0.0.1:8000/v1)")


HF = BackendPlugin(name="hf", target="planners.vlm.backends:make_hf", params=HFParams, extra="models",
                   modules=("torch", "transformers"),
                   summary="any AutoModelForImageTextToText checkpoint (+ LoRA) in process, batched greedy decoding")
OPENAI = BackendPlugin(name="openai", target="planners.vlm.backends:make_openai", params=OpenAIParams,
                       extra="models", modules=("openai",), summary="an OpenAI-compatible chat-completions server (vLLM, SGLang, ...)")


# --- vlm: the composite -----------------------------------------------------------------------
OWN = "vlm"


def backend_title(name: str) -> str:
    return f"backend {name}"


def prompt_title(suite: str) -> str:
    return f"prompt of {suite}"


class VLMParams(Composite):
    """The ``vlm`` planner's declaration: its own fields, the chosen backend's, and the
    prompt settings of the suite it runs (``SuitePlugin.prompt_params``); keys are flat.

    A key of the backend the run does not use is refused. A prompt setting of another suite
    is refused unless another job of the same ``harness run`` runs that suite: one planner
    configuration serves a multirun over several suites (``-m suite=eb_alfred,eb_manipulation``),
    each job ignoring the others' settings (they enter no identity). A key given as
    null counts as not given (the group's default applies) unless its field takes null: a
    configuration lists every group's keys with null defaults (``harness.param_schema.schema_node``).
    """

    def groups(self, values: Mapping[str, Any], suite: str | None) -> list[Group]:
        from harness.registry.catalog import BACKENDS

        backend_field = next(f for f in fields_of(VLMOwnParams) if f.name == "backend")
        backend = convert(backend_field, values.get("backend", backend_field.default))
        chosen = BACKENDS.entry(backend)
        out = [Group(OWN, VLMOwnParams), Group(backend_title(backend), chosen.params, chosen)]
        if suite is not None:
            prompt = _prompt_params(suite)
            if prompt is not None:
                out.append(Group(prompt_title(suite), prompt))
        return out

    def all_groups(self) -> list[Group]:
        from harness.registry.catalog import BACKENDS, SUITES

        out = [Group(OWN, VLMOwnParams)]
        out += [Group(backend_title(p.name), p.params) for p in BACKENDS.entries() if p.params is not None]
        out += [Group(prompt_title(s.name), s.prompt_params) for s in SUITES.entries()
                if getattr(s, "prompt_params", None) is not None]
        return out

    def parse(self, values: Mapping[str, Any], suite: str | None) -> Parsed:
        used = self.groups(values, suite)
        mine = {f.name for g in used for f in fields_of(g.params)}
        titles = {g.title for g in used}
        others = [g for g in self.all_groups() if g.title not in titles]
        elsewhere = {f.name for g in others for f in fields_of(g.params)}
        other_prompts = {f.name for g in others if g.title.startswith("prompt of ") for f in fields_of(g.params)}
        nullable = {f.name for g in used for f in fields_of(g.params) if f.optional}
        _check_prompt_keys(values, mine, [g for g in others if g.title.startswith("prompt of ")], suite)
        kept = {k: v for k, v in values.items()
                if (k in mine and (v is not None or k in nullable))
                or (k not in mine and not (k in elsewhere and (v is None or k in other_prompts)))}
        return super().parse(kept, suite)


def _check_prompt_keys(values: Mapping[str, Any], mine: set[str], other_prompts: list[Group],
                       suite: str | None) -> None:
    """Refuse a prompt setting given for a suite that no job of this ``harness run`` runs
    (``planner.params.on_bad_output=invalid`` on eb_alfred: an eb_manipulation setting); a sweep
    over several suites keeps the settings of each (harness.params.INVOCATION_SUITES)."""
    from harness.params import INVOCATION_SUITES

    runs = INVOCATION_SUITES.get()
    if runs is None:
        return
    for key, value in values.items():
        if value is None or key in mine:
            continue
        owners = [g.title[len(prompt_title("")):] for g in other_prompts
                  if any(f.name == key for f in fields_of(g.params))]
        if owners and not set(owners) & runs:
            ran = ", ".join(sorted(runs | ({suite} if suite else set())))
            raise ParamError(key, f"is a prompt setting of {' / '.join(owners)}, which this run does not use "
                                  f"(it runs {ran}); drop it")


def _prompt_params(suite: str) -> Any:
    from harness.registry.catalog import SUITES

    return getattr(SUITES.entry(suite), "prompt_params", None)


VLM = AgentPlugin(
    name="vlm", target="planners.vlm.planner:VLMPlanner", extra="models", params=VLMParams(), takes_suite=True,
    summary="a vision-language model (backend hf: in process; openai: a server) speaking the suite's prompt")
