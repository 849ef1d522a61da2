"""``vlm``: a vision-language model as a planner: a model backend plus the suite's prompt adapter.

The planner owns the model: a backend (``hf`` in process, ``openai`` against a
server; ``BackendPlugin`` s in the ``embodied_transfer.model_backends`` group),
its token limit and whether replies are constrained to an output JSON schema.
The suite it runs owns the words: its plugin names a prompt adapter
(:class:`harness.interfaces.PromptAdapter`: the messages of each call, the
output schema, the parser of the model's text) and declares its settings, so
the planner names no suite.

Each ``act`` call asks the adapter for every waiting episode's conversation,
sends them all to the backend at once (one batched ``generate`` in process, or
concurrent requests to a server) and hands each text back to the adapter for
the episode's :class:`AgentReply` (:func:`harness.promptkit.prompting.serve`).

Settings: :class:`planners.plugin.VLMParams`, a composite of the planner's own
fields, the chosen backend's and the suite's prompt settings; ``self.params``
holds only the groups of this run, so a run's identity holds only the settings
it uses.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping, Sequence

from harness.interfaces import AgentReply, AgentRequest, Conversation, ModelFacts
from harness.params import parse
from harness.promptkit.prompting import max_output_chars, serve
from harness.types import EpisodeSpec
from planners.plugin import VLM
from harness.promptkit.family import family_defaults

#: Bump when the planner's own logic (not prompt, parser or backend) changes results.
PLANNER_VERSION = "1"


class VLMPlanner:
    """A VLM planner for ``suite``. ``backend="hf"`` loads ``model`` (+ ``adapter``) in process;
    ``backend="openai"`` talks to the server at ``base_url`` serving ``model``."""

    name = "vlm"
    privileged = False
    action_kinds = frozenset({"text", "discrete"})
    reads_images = True
    Params = VLM.params

    def __init__(self, suite: str | None = None, **values: Any) -> None:
        from harness.registry.catalog import BACKENDS, SUITES
        from harness.registry.loader import load_target

        if not suite:
            raise ValueError("the vlm planner speaks a suite's prompt: build it with suite=<suite name>")
        plugin = SUITES.entry(suite)
        if not getattr(plugin, "prompt", None):
            raise ValueError(f"suite {suite} declares no prompt for a VLM planner (SuitePlugin.prompt)")
        self.params = parse(self.Params, values, suite=suite)
        own, backend_params, prompt_params = self.params.values()
        family = family_defaults(own.model, own.backend)
        self.json_schema = family.json_schema if own.json_schema in (None, "auto") else own.json_schema == "true"
        model = ModelFacts(name=own.model, max_new_tokens=own.max_new_tokens,
                           max_output_chars=max_output_chars(own.max_new_tokens),
                           auto=family.auto())
        # The prompt first: its files are read (and refused) before any weights load.
        self.adapter = load_target(plugin, "suite", plugin.prompt)(prompt_params, model)
        backend = BACKENDS.entry(own.backend)
        self.backend: Any = load_target(backend, "model backend")(
            own.model, backend_params, max_new_tokens=own.max_new_tokens, json_schema=self.json_schema,
            hash_weights=own.hash_weights)

    def identity(self) -> Mapping[str, Any]:
        """Derived facts only: versions, the backend's identity of the model (checkpoint
        hashes, the implementation in force), the prompt adapter's (prompt and parser
        versions, example digests, settings resolved from ``auto``) and the digest of the
        schema replies are constrained to."""
        schema = self.adapter.schema if self.json_schema else None
        return {"name": self.name, "version": PLANNER_VERSION, "backend": dict(self.backend.identity()),
                "prompt": dict(self.adapter.identity()), "schema": _digest(schema) if schema is not None else None}

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
        self.adapter.reset(episode)

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        """One backend call for every request that needs the model."""
        return serve(self.adapter, requests, self._generate)

    def _generate(self, conversations: list[Conversation], schema: Mapping[str, Any] | None) -> list[str]:
        """The backend's replies, constrained to ``schema`` when ``json_schema`` is on."""
        if self.json_schema and schema is not None:
            return self.backend.generate(conversations, schema=schema)
        return self.backend.generate(conversations)


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]
