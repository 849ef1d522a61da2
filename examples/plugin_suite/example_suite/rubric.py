"""``example_qa``'s judge rubric (``SuitePlugin.judge``), for ``harness judge``.

The judge sees the question, its choices, the right choice and the answer, and scores the
answer 0-10; its reply ends with a line ``SCORE: N``. A reply without such a line, or with a
number outside 0..10, is an ``unreadable`` verdict: no value, never a 0.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from harness.judging import Verdict
from harness.types import EpisodeSpec

VERSION = "example-qa-judge-1"
PROMPT = ("You grade answers to arithmetic multiple-choice questions.\n"
          "Question: {question}\nChoices: {choices}\nRight choice: {right}\n"
          "Score the answer from 0 (wrong or unreadable) to 10 (the right choice), then end your reply with "
          "one line 'SCORE: N'.\nANSWER: {answer}")
_SCORE = re.compile(r"^SCORE:\s*(\d+)\s*$", re.MULTILINE)


class QARubric:
    version = VERSION

    def identity(self) -> Mapping[str, Any]:
        return {"rubric": "example_qa", "version": VERSION}

    def needs(self, record: Mapping[str, Any], episode: EpisodeSpec) -> bool:
        return True  # every answer, an empty one too (it scores 0 by the prompt)

    def messages(self, episode: EpisodeSpec, answer: str) -> list[dict[str, Any]]:
        choices = " ".join(f"{letter}) {c}" for letter, c in zip("ABCD", episode.metadata["choices"]))
        text = PROMPT.format(question=episode.instruction, choices=choices, right=episode.metadata["answer"],
                             answer=answer)
        return [{"role": "user", "content": text}]

    def read(self, text: str, episode: EpisodeSpec) -> Verdict:
        found = _SCORE.findall(text or "")
        if not found or not 0 <= int(found[-1]) <= 10:
            return Verdict({}, "unreadable", "no 'SCORE: N' line with N in 0..10")
        return Verdict({"judge_score": float(found[-1])}, "ok")


def make_rubric(params: Mapping[str, Any]) -> QARubric:
    if params:
        raise ValueError(f"example_qa's rubric takes no parameters, got {sorted(params)}")
    return QARubric()
