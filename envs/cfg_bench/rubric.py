"""cfg_bench's judge rubric (``SuitePlugin.judge``) for ``harness judge``: open-ended answers only.

The judge sees the video's caption, the question, the reference answer and the answer
(:func:`envs.cfg_bench.judge_prompt.build_judge_prompt`, or the user's copy of the originals'
prompt with ``judge.rubric.prompt_file=PATH``, read with ``explicit_gate=False``); its reply is read
by :func:`envs.cfg_bench.scoring.parse_judge_reply`. Values: ``correctness``, ``detailedness``,
``judge_score`` (S) and, for CIA/CRS, ``gate`` (1 passed, 0 failed). An unreadable reply is an
``unreadable`` verdict (counted by the tables, never a 0).
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping

from envs.cfg_bench.data import MC_TASKS
from envs.cfg_bench.judge_prompt import (
    JUDGE_PROMPT_VERSION, JUDGE_TEMPERATURE, build_judge_prompt, load_original_prompt, render_original,
)
from envs.cfg_bench.scoring import parse_judge_reply
from harness.judging.verdicts import Verdict
from harness.types import EpisodeSpec


class CFGBenchRubric:
    def __init__(self, prompt_file: str | None = None) -> None:
        self.original = load_original_prompt(prompt_file) if prompt_file else None
        self.version = JUDGE_PROMPT_VERSION if self.original is None else "original-" + hashlib.sha256(
            self.original.encode()).hexdigest()[:12]

    def identity(self) -> Mapping[str, Any]:
        return {"rubric": "cfg_bench", "version": self.version, "recommended_temperature": JUDGE_TEMPERATURE}

    def needs(self, record: Mapping[str, Any], episode: EpisodeSpec) -> bool:
        answer = str((record.get("extra") or {}).get("answer") or "").strip()
        return episode.metadata["task_type"] not in MC_TASKS and bool(answer)  # an empty answer has nothing to judge

    def messages(self, episode: EpisodeSpec, answer: str) -> list[dict[str, Any]]:
        m = episode.metadata
        kw = dict(question=episode.instruction, task_type=m["task_type"], caption=m.get("caption", ""),
                  reference=m["correct_answer"])
        text = (build_judge_prompt(answer=answer, **kw) if self.original is None
                else render_original(self.original, answer=answer, **kw))
        return [{"role": "user", "content": [{"type": "text", "text": text}]}]

    def read(self, text: str, episode: EpisodeSpec) -> Verdict:
        try:
            v = parse_judge_reply(text, episode.metadata["task_type"], explicit_gate=self.original is None)
        except Exception as exc:  # never raises: an unusable reply is unreadable
            return Verdict({}, "unreadable", f"{type(exc).__name__}: {exc}"[:200])
        if v.status != "ok":
            return Verdict({}, "unreadable", v.problem)
        values: dict[str, float | None] = {"correctness": float(v.correctness), "detailedness": float(v.detailedness),
                                           "judge_score": float(v.score)}
        if v.gate is not None:
            values["gate"] = float(bool(v.gate))
        return Verdict(values, "ok")


def make_rubric(params: Mapping[str, Any]) -> CFGBenchRubric:
    unknown = sorted(set(params) - {"prompt_file"})
    if unknown:
        raise ValueError(f"unknown cfg_bench rubric parameter {unknown[0]!r} (known: prompt_file)")
    return CFGBenchRubric(params.get("prompt_file"))
