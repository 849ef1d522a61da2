"""procobject's prompt adapter for ``planner=vlm``: the question, what the model sees
(``visual``: the clip sampled at the suite's ``fps``, its middle frame, or nothing: blind, no
video decoded) and the reply format ``{"answer": ..., "evidence": [[t0, t1], ...]}`` with times
in seconds from the clip's start. The reply goes to the env as given: it reads and scores it."""

from __future__ import annotations

from typing import Any, Mapping

from envs.video_frames import visual_parts
from harness.interfaces import AgentReply, AgentRequest, ModelFacts
from harness.types import EpisodeSpec

PROMPT_VERSION = "procobject-prompt-1"


class ProcObjectPrompt:
    schema = None

    def __init__(self, params: Any, model: ModelFacts) -> None:
        self.visual = str(params.visual)

    def identity(self) -> Mapping[str, Any]:
        return {"prompt_version": PROMPT_VERSION, "visual": self.visual}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def messages(self, request: AgentRequest) -> list[dict[str, Any]]:
        obs = request.observation
        start, end = float(obs["clip_start"]), float(obs["clip_end"])
        content = visual_parts(obs["video"], start, end, visual=self.visual, fps=obs["fps"],
                               max_frames=obs["max_frames"], rule=obs["sampling"])
        seen = {"video": "the video above is the clip", "frame": "the image above is the middle "
                "frame of a video clip", "none": "you cannot see the video clip"}[self.visual]
        text = (f"Question about a procedure ({seen}, {end - start:.1f} seconds long): {request.episode.instruction}\n"
                "Answer, and give the time spans of the clip that support your answer, in seconds from the "
                'clip\'s start. Reply with JSON only: {"answer": "<text>", "evidence": [[start, end], ...]}')
        content.append({"type": "text", "text": text})
        return [{"role": "user", "content": content}]

    def reply(self, request: AgentRequest, text: str, conversation: Any) -> AgentReply:
        return AgentReply([text], raw_output=text)


def make_adapter(params: Any, model: ModelFacts) -> ProcObjectPrompt:
    return ProcObjectPrompt(params, model)
