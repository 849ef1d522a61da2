"""The procobject suite: one ProcObject-10K question per episode, answered in one step.

Episodes come from ``suite.params.data_dir`` or ``$PROCOBJECT_DATA_DIR`` (``data/testing.json``
and the videos, docs/procobject.md). ``reset`` shows the question, the video's path and the
clip's bounds; the one ``step`` takes the reply ``{"answer": ..., "evidence": [[t0, t1], ...]}``
(:func:`envs.procobject.answer.parse_reply`) and scores its grounding against the reference
spans (:func:`envs.procobject.grounding.ground`): ``info["values"]`` holds ``iou``, ``iop``,
``iog``, ``iou_at_0_3``, ``iou_at_0_5``, ``unreadable`` and ``span_problems`` (and, for a reply
without a readable answer, None for each judged value: no answer); the answer text
goes to ``info["answer"]`` as given (the judge reads its ``answer``; the official predictions
file re-reads its spans). The env never decodes the video.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.spaces import AnswerText

from envs import video_qa
from envs.procobject import data as D
from envs.procobject.answer import parse_reply, usable_reference
from envs.procobject.grounding import NO_REFERENCE, THRESHOLDS, ground, has_reference
from envs.procobject.plugin import DATA_ENV, METRICS, ProcObjectParams
from harness.util.media import sampling_identity
from harness.params import parse
from harness.types import EpisodeSpec

VERSION = "1.1.0"
MAX_REPLY_CHARS = 16000
#: The values of a reply without a readable answer: None for each judged metric's value, the
#: env's "no answer" (harness.judging.views.unanswered): each counts as the metric's missing value
#: (0) and is never sent to a judge.
NO_ANSWER: dict[str, None] = {m.value: None for m in METRICS if m.judged}


def data_root(data_dir: str | None) -> Path:
    return video_qa.data_root("procobject", data_dir, DATA_ENV, D.MissingData)


class ProcObjectSuite:
    name = "procobject"
    version = VERSION
    action_kind = "text"

    def __init__(self, **values: Any) -> None:
        self.params = parse(ProcObjectParams, values)

    def splits(self) -> Sequence[str]:
        return tuple(D.SPLIT_FILES)

    def protocol(self, split: str) -> Mapping[str, Any]:
        return {"max_steps": 1, "frames": sampling_identity(float(self.params.fps), int(self.params.max_frames),
                                                             rule=str(self.params.sampling)),
                "grounding": "set-level merged IoU/IoP/IoG; empty prediction 0", "thresholds": list(THRESHOLDS)}

    def episodes(self, split: str) -> Sequence[EpisodeSpec]:
        if split not in D.SPLIT_FILES:
            raise KeyError(f"unknown ProcObject-10K split {split!r} (splits: {', '.join(D.SPLIT_FILES)})")
        root = data_root(self.params.data_dir)
        out = []
        for item in D.load_items(root, split):
            video = D.video_file(root, item)
            out.append(EpisodeSpec(
                suite=self.name, split=split, episode_id=item.qid, seed=0, instruction=item.question,
                metadata={"task_type": item.type_key, "pattern": item.pattern_key, "answer": item.answer,
                          "evidence": [list(s) for s in item.evidence], "video_path": item.video_path,
                          "video": str(video) if video is not None else None, "clip_start": item.clip_start,
                          "clip_end": item.clip_end, "domain": item.domain, "source": item.source,
                          "reference": "given" if has_reference(usable_reference(item.evidence, item.duration)[0])
                          else NO_REFERENCE,
                          "fps": float(self.params.fps), "max_frames": int(self.params.max_frames),
                          "sampling": str(self.params.sampling)}))
        return out

    def make_env(self) -> "ProcObjectEnv":
        return ProcObjectEnv()


class ProcObjectEnv(video_qa.VideoQAEnv):
    action_space = AnswerText(max_length=MAX_REPLY_CHARS)  # a free-text answer (harness.spaces)
    suite, video_key = "procobject", "video_path"

    def privileged(self, episode: EpisodeSpec) -> Any:
        return {"answer": episode.metadata["answer"], "evidence": episode.metadata["evidence"]}

    def observation(self, episode: EpisodeSpec) -> dict[str, Any]:
        m = episode.metadata
        return {"text": episode.instruction, "question": episode.instruction, "video": m["video"],
                "clip_start": m["clip_start"], "clip_end": m["clip_end"],
                "duration": m["clip_end"] - m["clip_start"], "fps": m["fps"], "max_frames": m["max_frames"],
                "sampling": m["sampling"]}

    def answer(self, episode: EpisodeSpec, action: Any) -> video_qa.Answered:
        m = episode.metadata
        text = video_qa.text_of(action)
        duration = m["clip_end"] - m["clip_start"]
        reply = parse_reply(text, duration)
        reference, refused = usable_reference(m["evidence"], duration)  # the rule a prediction meets
        g = ground(reply.evidence, reference)
        values: dict[str, float | None] = {"unreadable": int(reply.answer is None),
                                           "span_problems": reply.refused_total}
        if refused:  # reference spans left out by the rule a prediction meets (counted where any)
            values["reference_refused"] = refused
        if g is not None:
            values.update(iou=g.iou, iop=g.iop, iog=g.iog,
                          **{f"iou_at_{str(t).replace('.', '_')}": int(g.iou >= t) for t in THRESHOLDS})
        if reply.answer is None:  # an empty, absent or unreadable answer: no answer, never judged
            values.update(NO_ANSWER)
        return video_qa.Answered(values, False, reply.answer is None, reply.status, text[:MAX_REPLY_CHARS])
