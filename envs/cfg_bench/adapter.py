"""cfg_bench's prompt adapter for ``planner=vlm``: the question (:mod:`envs.cfg_bench.prompt`)
with what the model sees (``visual``, :mod:`envs.video_frames`): the clip sampled at the suite's
``fps`` (at most ``max_frames``) as a video part, its middle frame, or nothing (blind: no decoding).
MC replies go to the env as given (it applies the strict extraction rule and counts unreadable
ones); open-ended replies are read by :func:`envs.cfg_bench.prompt.open_answer`.
"""

from __future__ import annotations

from typing import Any, Mapping

from envs.cfg_bench.prompt import MAX_NEW_TOKENS, PROMPT_VERSION, build_prompt, open_answer
from envs.cfg_bench.suite import question_of
from envs.video_frames import visual_parts
from harness.interfaces import AgentReply, AgentRequest, ModelFacts
from harness.types import EpisodeSpec

ADAPTER_VERSION = "1"


class CFGBenchPrompt:
    schema = None

    def __init__(self, params: Any, model: ModelFacts) -> None:
        self.hint, self.visual = str(params.hint), str(params.visual)

    def identity(self) -> Mapping[str, Any]:
        return {"prompt_version": PROMPT_VERSION, "adapter_version": ADAPTER_VERSION, "hint": self.hint,
                "visual": self.visual, "max_new_tokens": MAX_NEW_TOKENS}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def messages(self, request: AgentRequest) -> list[dict[str, Any]]:
        text = build_prompt(question_of(request.episode), hint=self.hint, visual=self.visual)
        obs = request.observation
        content = visual_parts(obs["video"], obs["clip_start"], obs["clip_end"], visual=self.visual, fps=obs["fps"],
                               max_frames=obs["max_frames"], rule=obs["sampling"]) + [{"type": "text", "text": text}]
        return [{"role": "user", "content": content}]

    def reply(self, request: AgentRequest, text: str, conversation: Any) -> AgentReply:
        if request.observation["options"]:
            return AgentReply([text], raw_output=text)
        return AgentReply([open_answer(text)], raw_output=text)


def make_adapter(params: Any, model: ModelFacts) -> CFGBenchPrompt:
    return CFGBenchPrompt(params, model)
