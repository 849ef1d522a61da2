"""``vlm``: a vision-language model as a planner (backend + prompt + parser), per suite.

The same checkpoint and backend serve every suite; the prompt and the parser
follow the episode's suite:

* ``eb_alfred``: EmbodiedBench's EB-ALFRED protocol (:mod:`planners.vlm.prompt`,
  :mod:`planners.vlm.parse`): action ids of the episode's numbered action list.
* ``eb_manipulation``: EB-Manipulation's text-action protocol
  (:mod:`planners.eb_manipulation_prompt`): lists of 7 integers; unusable
  output becomes the original's (seeded) random action, executed and kept in
  the history (``on_bad_output=random``, the default), or an invalid action
  with ``on_bad_output=invalid``; counted as a planner output error either way.
* ``alfred``: FLARE-style triplets (:mod:`planners.alfred_prompt`) with example
  retrieval from ``alfred_examples`` and grounded replanning.

Each ``act`` call builds one prompt per waiting episode, sends them all to the
backend at once (one batched ``generate`` in process, or concurrent requests
to a server) and parses every output into action ids of the episode's action
list. It returns :class:`AgentReply` objects: ``actions`` are the ids to run
open-loop; ``output_error`` is set (and ``actions`` empty) when the output
yields no action, which the runner turns into one invalid action without an
env step or a history entry.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.interfaces import AgentReply, AgentRequest
from harness.types import EpisodeSpec
from planners.episode_cache import EpisodeCache
from planners.vlm.backends import BACKENDS, DEFAULT_MAX_NEW_TOKENS
from planners.vlm.parse import PARSER_MODES, PARSER_VERSION, max_output_chars, parse_plan
from planners.vlm.family import family_defaults, resolve
from planners.vlm.prompt import (
    OUTPUT_SCHEMA, DEFAULT_IMAGE_SIZE, DEFAULT_NUM_EXAMPLES, PromptBuilder, PromptOptions, is_long_horizon,
)

#: Bump when the planner's own logic (not prompt, parser or backend) changes results.
PLANNER_VERSION = "1"


class VLMPlanner:
    """A VLM planner. ``backend="hf"`` loads ``model`` (+ ``adapter``) in process;
    ``backend="openai"`` talks to the server at ``base_url`` serving ``model``."""

    name = "vlm"
    privileged = False
    action_kinds = frozenset({"text", "discrete"})
    reads_images = True

    def __init__(
        self,
        backend: str = "hf",
        model: str | None = None,
        # hf
        adapter: str | None = None,
        merge_adapter: bool = False,
        dtype: str = "auto",
        device_map: str | None = None,
        attn_implementation: str | None = None,
        batch_size: int = 16,
        trust_remote_code: bool = False,
        num_threads: int | str = "auto",
        # openai
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        max_concurrency: int = 8,
        request_timeout_s: float = 120.0,
        max_retries: int = 3,
        served_checkpoint: str | None = None,
        # both
        json_schema: bool | str | None = "auto",
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        hash_weights: bool = False,
        # prompt and parser
        parser: str = "auto",
        prompt_source: str = "ours",
        embodiedbench_dir: str | None = None,
        examples_dir: str | None = None,
        num_examples: int = DEFAULT_NUM_EXAMPLES,
        image_size: int | None = DEFAULT_IMAGE_SIZE,
        output_template: bool | str | None = "auto",
        feedback: bool = True,
        mode: str = "single",
        # eb_manipulation
        manipulation_examples: str | None = None,
        manipulation_shots: int = 4,
        on_bad_output: str = "random",
        # alfred
        alfred_examples: str | None = None,
        alfred_k: int = 9,
        grounded_replanning: bool = True,
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"unknown vlm backend {backend!r}; choose one of {', '.join(BACKENDS)}")
        if not model:
            raise ValueError("the vlm planner needs model=<checkpoint path or served model name>")
        family = family_defaults(model, backend)
        if parser == "auto":
            parser = family.parser
        if parser not in PARSER_MODES:
            raise ValueError(f"unknown parser {parser!r}; choose one of auto, {', '.join(PARSER_MODES)}")
        self.json_schema = resolve(json_schema, family.json_schema, "json_schema")
        output_template = resolve(output_template, family.output_template, "output_template")
        if backend == "hf" and base_url:
            raise ValueError("base_url is an openai-backend parameter; set backend=openai to use a server")
        if backend == "openai" and adapter:
            raise ValueError("adapter is an hf-backend parameter; a server loads its adapters itself "
                             "(e.g. vLLM --lora-modules) and serves them under a model name")
        if backend == "openai" and not base_url:
            raise ValueError("the openai backend needs base_url (e.g. http://127.0.0.1:8000/v1)")
        self.parser = parser
        self._max_chars = max_output_chars(max_new_tokens)
        self.prompts = PromptBuilder(examples_dir, PromptOptions(
            num_examples=int(num_examples), image_size=int(image_size) if image_size else None,
            output_template=output_template, feedback=bool(feedback), mode=mode, source=prompt_source),
            embodiedbench_dir=embodiedbench_dir)
        if backend == "hf":
            from planners.vlm.backends import HFBackend

            self.backend: Any = HFBackend(
                model, adapter=adapter, merge_adapter=merge_adapter, dtype=dtype, device_map=device_map,
                attn_implementation=attn_implementation, max_new_tokens=max_new_tokens, batch_size=batch_size,
                trust_remote_code=trust_remote_code, hash_weights=hash_weights, json_schema=self.json_schema,
                num_threads=num_threads)
        else:
            from planners.vlm.backends import OpenAIBackend

            self.backend = OpenAIBackend(
                model, base_url=base_url, api_key_env=api_key_env,  # type: ignore[arg-type]
                max_concurrency=max_concurrency, request_timeout_s=request_timeout_s, max_retries=max_retries,
                max_new_tokens=max_new_tokens, json_schema=self.json_schema, served_checkpoint=served_checkpoint,
                hash_weights=hash_weights)
        # chat mode only: this episode's earlier usable outputs.
        self._past: EpisodeCache[list[str]] = EpisodeCache()
        from planners import eb_manipulation_prompt as manip

        if on_bad_output not in manip.ON_BAD_OUTPUT:
            raise ValueError(f"on_bad_output must be 'random' or 'invalid', got {on_bad_output!r}")
        self._manip = manip
        self._manip_examples = manip.load_examples(manipulation_examples)
        self.manipulation_shots = int(manipulation_shots)
        self.on_bad_output = on_bad_output
        self._image_size = int(image_size) if image_size else None
        self._calls: EpisodeCache[list[int]] = EpisodeCache()
        from planners.alfred_prompt import AlfredTripletPlanner

        self._alfred = AlfredTripletPlanner(self.backend, examples=alfred_examples, k=int(alfred_k),
                                            grounded_replanning=bool(grounded_replanning))

    def identity(self) -> Mapping[str, Any]:
        alfred = dict(self._alfred.identity())
        alfred.pop("backend", None)
        return {
            "name": self.name, "version": PLANNER_VERSION, "parser": self.parser, "parser_version": PARSER_VERSION,
            "prompt": self.prompts.identity(), "backend": dict(self.backend.identity()),
            # The schemas themselves: a changed schema constrains differently under the same flag.
            "schemas": {"eb_alfred": _digest(OUTPUT_SCHEMA), "eb_manipulation": _digest(self._manip.OUTPUT_SCHEMA)}
            if self.json_schema else None,
            "eb_manipulation": {"prompt_version": self._manip.PROMPT_VERSION, "shots": self.manipulation_shots,
                                "examples": self._manip.examples_digest(self._manip_examples),
                                "on_bad_output": self.on_bad_output},
            "alfred": alfred,
        }

    def identity_for(self, suite: str) -> Mapping[str, Any]:
        """The identity a run of ``suite`` depends on: EB-Manipulation ignores the EB-ALFRED
        prompt and ``parser`` settings and ALFRED's, so they stay out of its run identity
        (other suites keep the whole :meth:`identity`, so their run ids are unchanged)."""
        ident = dict(self.identity())
        if suite == "eb_manipulation":
            for key in ("parser", "prompt", "alfred"):
                ident.pop(key, None)
            ident["eb_manipulation"] = {**ident["eb_manipulation"], "image_size": self._image_size}
        return ident

    def share_cores(self, env_workers: int) -> int | None:
        """The run has ``env_workers`` env worker processes beside this process: the ``hf``
        backend leaves them their cores (planners/vlm/threads.py); returns its thread count."""
        share = getattr(self.backend, "share_cores", None)
        return share(env_workers) if share is not None else None

    @property
    def max_concurrent_calls(self) -> int:
        """Agent calls the pipelined runner may make at once: a server's client
        (``openai``) sends each episode's request as soon as it is ready, up to
        ``max_concurrency`` (a vLLM/SGLang server batches them continuously); the
        in-process ``hf`` backend takes one batched call at a time."""
        return int(getattr(self.backend, "max_concurrency", 1))

    def reset(self, episode: EpisodeSpec) -> None:
        self._past.pop(episode.key)
        self._calls.pop(episode.key)
        if episode.suite == "alfred":
            self._alfred.reset(episode)

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        """One backend call per suite among the requests (a run has one suite)."""
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(r.episode.suite, []).append(i)
        replies: list[Any] = [None] * len(requests)
        for suite, idx in groups.items():
            part = [requests[i] for i in idx]
            if suite == "alfred":
                out = self._alfred.act(part)
            elif suite == "eb_manipulation":
                out = self._act_manipulation(part)
            else:
                out = self._act_eb_alfred(part)
            for i, reply in zip(idx, out):
                replies[i] = reply
        return replies

    def _generate(self, conversations: list[Any], schema: Mapping[str, Any]) -> list[str]:
        """The backend's replies, constrained to the suite's ``schema`` when ``json_schema`` is on."""
        if self.json_schema:
            return self.backend.generate(conversations, schema=schema)
        return self.backend.generate(conversations)

    def _act_manipulation(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        conversations = []
        for r in requests:
            obs = r.observation if isinstance(r.observation, Mapping) else {}
            if "object_coordinates_text" not in obs:
                raise ValueError("the vlm planner on eb_manipulation needs observation['object_coordinates_text']")
            conversations.append(self._manip.build_messages(
                obs.get("instruction") or r.episode.instruction, obs["object_coordinates_text"],
                r.episode.metadata["task_class"], r.history, self._manip_examples, image=obs.get("image"),
                n_shot=self.manipulation_shots, image_size=self._image_size))
        outputs = self._generate(conversations, self._manip.OUTPUT_SCHEMA)
        replies = []
        for r, conv, text in zip(requests, conversations, outputs):
            calls = self._calls.get(r.episode.key, lambda: [0])
            replies.append(self._manip.reply_from_output(
                text, on_bad_output=self.on_bad_output, episode_key=r.episode.key, call_index=calls[0],
                prompt=_prompt_text(conv)))
            calls[0] += 1
        return replies

    def _act_eb_alfred(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        conversations, action_lists = [], []
        for r in requests:
            obs = r.observation if isinstance(r.observation, Mapping) else {}
            actions = obs.get("actions")
            if not actions:
                raise ValueError("the vlm planner needs observation['actions'] (the scene's numbered action list)")
            past = self._past.get(r.episode.key, list) if self.prompts.options.mode == "chat" else []
            conversations.append(self.prompts.messages(
                obs.get("instruction") or r.episode.instruction, actions, r.history, obs.get("image"),
                is_long_horizon(r.episode.metadata), past))
            action_lists.append(actions)
        outputs = self._generate(conversations, OUTPUT_SCHEMA)
        replies = []
        for r, conv, actions, text in zip(requests, conversations, action_lists, outputs):
            result = parse_plan(text, actions, self.parser, self._max_chars)
            if result.error is None and self.prompts.options.mode == "chat":
                self._past.get(r.episode.key, list).append(text)
            replies.append(result.reply(text, _prompt_text(conv)))
        return replies


def _digest(obj: Any) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def _prompt_text(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with images replaced by their size (what the transcripts keep)."""
    out = []
    for m in messages:
        parts = []
        for p in m["content"]:
            if p.get("type") == "image":
                parts.append({"type": "image", "size": list(p["image"].size)})
            else:
                parts.append(p)
        out.append({"role": m["role"], "content": parts})
    return out
