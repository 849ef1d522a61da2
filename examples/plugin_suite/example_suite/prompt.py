"""The example suite's prompt adapter: how a model-backed planner (``planner=vlm``) speaks it.

The planner owns the model; this adapter owns the words. Per call it builds the conversation
of one request (:meth:`ExamplePrompt.messages`) and reads the model's text back as moves
(:meth:`ExamplePrompt.reply`). Text without a move is unusable output: an ``output_error``,
which the runner counts and the env charges as one invalid action.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from harness.interfaces import AgentReply, AgentRequest, ModelFacts
from harness.types import EpisodeSpec

#: Bump when the words or the parser change (it is in the run identity through identity()).
PROMPT_VERSION = "1"
_MOVE = re.compile(r"\b(left|right)\b", re.I)


class ExamplePrompt:
    #: No output JSON schema: the reply is plain text.
    schema = None

    def __init__(self, params: Any, model: ModelFacts) -> None:
        self.max_moves = int(params.max_moves)
        self.max_chars = int(model.max_output_chars)

    def identity(self) -> Mapping[str, Any]:
        return {"prompt_version": PROMPT_VERSION}

    def reset(self, episode: EpisodeSpec) -> None:
        pass  # nothing kept between calls

    def messages(self, request: AgentRequest) -> list[dict[str, Any]]:
        obs = request.observation
        text = (f"{request.episode.instruction} {obs['text']} Reply with moves, each 'left' or 'right', "
                f"at most {self.max_moves}.")
        return [{"role": "user", "content": [{"type": "text", "text": text}]}]

    def reply(self, request: AgentRequest, text: str, conversation: Any) -> AgentReply:
        moves = [m.lower() for m in _MOVE.findall(text[: self.max_chars])][: self.max_moves]
        if not moves:
            return AgentReply((), raw_output=text, output_error="no move (left / right) in the reply")
        return AgentReply(moves, raw_output=text)


def make_adapter(params: Any, model: ModelFacts) -> ExamplePrompt:
    """The factory ``SuitePlugin.prompt`` names: called with the parsed prompt settings."""
    return ExamplePrompt(params, model)
