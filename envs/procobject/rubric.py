"""procobject's judge rubric (``SuitePlugin.judge``) for ``harness judge``: J in [0, 5], the mean
of the four dimensions (:mod:`envs.procobject.judge_prompt`). The stored answer is the model's
reply as given; the judge is shown its ``answer`` field. An unreadable reply, or judge reply, is
not judged / an ``unreadable`` verdict, never a 0."""

from __future__ import annotations

from typing import Any, Mapping

from envs.procobject.answer import answer_text
from envs.procobject.judge_prompt import DIMENSIONS, JUDGE_PROMPT_VERSION, build_judge_prompt, parse_judge_reply
from harness.judging.verdicts import Verdict
from harness.types import EpisodeSpec


class ProcObjectRubric:
    version = JUDGE_PROMPT_VERSION

    def identity(self) -> Mapping[str, Any]:
        return {"rubric": "procobject", "version": self.version}

    def needs(self, record: Mapping[str, Any], episode: EpisodeSpec) -> bool:
        return answer_text(str((record.get("extra") or {}).get("answer") or "")) is not None

    def messages(self, episode: EpisodeSpec, answer: str) -> list[dict[str, Any]]:
        text = build_judge_prompt(question=episode.instruction, reference=episode.metadata["answer"],
                                  answer=answer_text(answer) or answer)
        return [{"role": "user", "content": [{"type": "text", "text": text}]}]

    def read(self, text: str, episode: EpisodeSpec) -> Verdict:
        try:
            v = parse_judge_reply(text)
        except Exception as exc:  # never raises
            return Verdict({}, "unreadable", f"{type(exc).__name__}: {exc}"[:200])
        if v.status != "ok":
            return Verdict({}, "unreadable", v.problem)
        return Verdict({"judge_score": float(v.j), **{d: float(s) for d, s in zip(DIMENSIONS, v.scores)}}, "ok")


def make_rubric(params: Mapping[str, Any]) -> Any:
    """The judge rubric (no parameters), or with ``scorer=...`` (``judge.backend=local``) one of
    the embedding-level scorers of :mod:`envs.procobject.similarity`."""
    if "scorer" in params:
        from envs.procobject.similarity import make_scorer

        return make_scorer(params)
    if params:
        raise ValueError(f"unknown procobject rubric parameter {sorted(params)[0]!r} (it takes none)")
    return ProcObjectRubric()
