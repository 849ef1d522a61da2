"""A model backend whose replies the test chooses (``scripted``, inspect_ai's ``mockllm``): a
test registers a reply script with :func:`scripted_replies` and runs ``planner=vlm
backend=scripted script=NAME``, so prompt adapters run end to end without a model. Plugin
authors import :func:`scripted_replies` from :mod:`harness.testing`."""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from harness.params import param
from harness.plugins import BackendPlugin

#: What a scripted reply function sees: the conversation's text parts joined, the output schema
#: (or None), and the call's index in the backend's life.
ScriptFn = Callable[[str, Any, int], str]

_SCRIPTS: dict[str, ScriptFn] = {}
_SCRIPTS_LOCK = threading.Lock()


def _default_script(text: str, schema: Any, call: int) -> str:
    return "scripted backend: no script chosen (harness.testing.scripted_replies)"


_SCRIPTS["default"] = _default_script


@dataclass
class ScriptedParams:
    """The ``scripted`` model backend (:func:`scripted_replies`)."""

    script: str = param("default", help="the name of a reply script a test registered with "
                                        "harness.testing.scripted_replies (default: one fixed unusable reply)")


class ScriptedBackend:
    """A model backend whose replies the test chooses (inspect_ai's ``mockllm``): each
    conversation's reply is ``script(text, schema, call_index)`` of the script named by
    ``script=``. Knows no suite: the suite's prompt adapter builds the conversation and reads
    the reply, as with a real model. Keeps each conversation it was sent (``self.sent``)."""

    def __init__(self, model: str, script: str = "default", *, max_new_tokens: int = 256, json_schema: bool = False):
        self.model, self.script = model, script
        self.max_new_tokens, self.json_schema = int(max_new_tokens), bool(json_schema)
        self.calls = 0
        self.sent: list[str] = []
        if script not in _SCRIPTS:
            raise ValueError(f"no reply script named {script!r} (register one with harness.testing.scripted_replies)")

    def identity(self) -> Mapping[str, Any]:
        return {"backend": "scripted", "model": self.model, "script": self.script}

    def generate(self, conversations: Sequence[Any], schema: Mapping[str, Any] | None = None) -> list[str]:
        fn = _SCRIPTS.get(self.script)
        if fn is None:
            raise RuntimeError(f"the reply script {self.script!r} is no longer registered")
        out = []
        for conversation in conversations:
            text = conversation_text(conversation)
            self.sent.append(text)
            out.append(str(fn(text, schema, self.calls)))
            self.calls += 1
        return out


def conversation_text(conversation: Sequence[Mapping[str, Any]]) -> str:
    """The text parts of a conversation (processor convention), joined with newlines."""
    parts: list[str] = []
    for message in conversation:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
            continue
        for part in content or ():
            if isinstance(part, Mapping) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
    return "\n".join(parts)


def make_scripted(model: str, params: Any, *, max_new_tokens: int, json_schema: bool, hash_weights: bool) -> ScriptedBackend:
    """The ``scripted`` backend plugin's factory (``planner=vlm backend=scripted script=NAME``)."""
    return ScriptedBackend(model, params.script, max_new_tokens=max_new_tokens, json_schema=json_schema)


def scripted_replies(replies: ScriptFn | Sequence[str] | str, name: str = "test") -> Any:
    """Register a reply script for ``planner=vlm backend=scripted script=<name>`` while the
    ``with`` block runs. ``replies``: a function ``(conversation text, schema, call index) ->
    reply`` (make it a function of the text, so that runs repeat whatever the schedule), a list
    of replies taken in turn, or one reply for every call."""
    if isinstance(replies, str):
        fn: ScriptFn = lambda text, schema, call, r=replies: r  # noqa: E731
    elif callable(replies):
        fn = replies
    else:
        seq = list(replies)
        if not seq:
            raise ValueError("scripted_replies needs at least one reply")
        fn = lambda text, schema, call, s=seq: s[call % len(s)]  # noqa: E731

    @contextlib.contextmanager
    def block() -> Any:
        with _SCRIPTS_LOCK:
            if name in _SCRIPTS and name != "default":
                raise ValueError(f"a reply script named {name!r} is already registered")
            _SCRIPTS[name] = fn
        try:
            yield name
        finally:
            with _SCRIPTS_LOCK:
                _SCRIPTS.pop(name, None)

    return block()


#: The ``scripted`` backend plugin (entry point ``embodied_transfer.model_backends``).
SCRIPTED = BackendPlugin(name="scripted", target="harness.check.scripted:make_scripted", params=ScriptedParams,
                         summary="replies a test chooses (harness.testing.scripted_replies): prompt adapters "
                                 "through planner=vlm without a model")


__all__ = ["SCRIPTED", "ScriptFn", "ScriptedBackend", "ScriptedParams", "conversation_text", "make_scripted",
           "scripted_replies"]
