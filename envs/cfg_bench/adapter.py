"""cfg_bench's prompt adapter for ``planner=vlm``: the question (:mod:`envs.cfg_bench.prompt`)
with what the model sees (``visual``): the clip's frames sampled at the suite's ``fps`` (at most
``max_frames``), its single middle frame, or nothing at all (blind: the video is not decoded).
MC replies go to the env as given (it applies the strict extraction rule and counts unreadable
ones); open-ended replies are read by :func:`envs.cfg_bench.prompt.open_answer`.
"""

from __future__ import annotations

from typing import Any, Mapping

from envs.cfg_bench.prompt import MAX_NEW_TOKENS, PROMPT_VERSION, build_prompt, open_answer
from envs.cfg_bench.suite import question_of
from envs.video_frames import clip_frames, middle_frame
from harness.interfaces import AgentReply, AgentRequest, ModelFacts
from harness.types import EpisodeSpec

ADAPTER_VERSION = "1"


def visual_parts(obs: Mapping[str, Any], visual: str) -> list[dict[str, Any]]:
    """The image parts of one question's clip per ``visual`` (none decodes nothing)."""
    if visual == "none":
        return []
    if visual == "frame":
        images = [middle_frame(obs["video"], obs["clip_start"], obs["clip_end"])]
    else:
        images = clip_frames(obs["video"], obs["clip_start"], obs["clip_end"], fps=obs["fps"],
                             max_frames=obs["max_frames"])
    return [{"type": "image", "image": im} for im in images]


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
        text = build_prompt(question_of(request.episode), hint=self.hint)
        content = visual_parts(request.observation, self.visual) + [{"type": "text", "text": text}]
        return [{"role": "user", "content": content}]

    def reply(self, request: AgentRequest, text: str, conversation: Any) -> AgentReply:
        if request.observation["options"]:
            return AgentReply([text], raw_output=text)
        return AgentReply([open_answer(text)], raw_output=text)


def make_adapter(params: Any, model: ModelFacts) -> CFGBenchPrompt:
    return CFGBenchPrompt(params, model)
