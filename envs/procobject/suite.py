"""The procobject suite: one ProcObject-10K question per episode, answered in one step.

Episodes come from ``suite.params.data_dir`` or ``$PROCOBJECT_DATA_DIR`` (``data/testing.json``
and the videos, docs/procobject.md). ``reset`` shows the question, the video's path and the
clip's bounds; the one ``step`` takes the reply ``{"answer": ..., "evidence": [[t0, t1], ...]}``
(:func:`envs.procobject.answer.parse_reply`) and scores its grounding against the reference
spans (:func:`envs.procobject.grounding.ground`): ``info["values"]`` holds ``iou``, ``iop``,
``iog``, ``iou_at_0_3``, ``iou_at_0_5``, ``unreadable`` and ``span_problems``; the answer text
goes to ``info["answer"]`` as given (the judge reads its ``answer``; the official predictions
file re-reads its spans). The env never decodes the video.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import gymnasium as gym
from gymnasium import spaces

from envs.procobject import data as D
from envs.procobject.answer import parse_reply
from envs.procobject.grounding import THRESHOLDS, ground
from envs.procobject.plugin import DATA_ENV, ProcObjectParams
from harness.params import parse
from harness.types import (
    INFO_ACTION_OK, INFO_ANSWER, INFO_FEEDBACK, INFO_GC_SATISFIED, INFO_GC_TOTAL, INFO_INVALID_ACTIONS,
    INFO_PRIVILEGED, INFO_SUCCESS, INFO_TASK_TYPE, INFO_TERMINATION, INFO_VALUES, EpisodeSpec,
)

VERSION = "1.0.0"
MAX_REPLY_CHARS = 16000


def data_root(data_dir: str | None) -> Path:
    root = data_dir or os.environ.get(DATA_ENV)
    if not root:  # what `harness fetch procobject` laid out, when it completed
        from harness.fetch import fetched_dir

        fetched = fetched_dir("procobject")
        root = str(fetched) if fetched is not None else None
    if not root:
        raise D.DataError(f"procobject needs its data: set suite.params.data_dir=FOLDER or ${DATA_ENV} "
                          "(harness fetch procobject lays it out)")
    return Path(root).expanduser()


class ProcObjectSuite:
    name = "procobject"
    version = VERSION
    action_kind = "text"

    def __init__(self, **values: Any) -> None:
        self.params = parse(ProcObjectParams, values)

    def splits(self) -> Sequence[str]:
        return tuple(D.SPLIT_FILES)

    def protocol(self, split: str) -> Mapping[str, Any]:
        return {"max_steps": 1, "fps": float(self.params.fps), "max_frames": int(self.params.max_frames),
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
                          "fps": float(self.params.fps), "max_frames": int(self.params.max_frames)}))
        return out

    def make_env(self) -> "ProcObjectEnv":
        return ProcObjectEnv()


class ProcObjectEnv(gym.Env):
    action_space = spaces.Text(max_length=MAX_REPLY_CHARS)

    def __init__(self) -> None:
        self._episode: EpisodeSpec | None = None

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        super().reset(seed=seed)
        episode = (options or {}).get("episode")
        if not isinstance(episode, EpisodeSpec):
            raise ValueError("reset needs options={'episode': EpisodeSpec}")
        video = episode.metadata.get("video")
        if not video or not Path(video).is_file():
            raise FileNotFoundError(f"procobject {episode.episode_id}: video {episode.metadata['video_path']!r} "
                                    "is not in the data folder")
        self._episode = episode
        info = {INFO_SUCCESS: False, INFO_GC_SATISFIED: 0, INFO_GC_TOTAL: 0, INFO_INVALID_ACTIONS: 0,
                INFO_TASK_TYPE: episode.metadata["task_type"], INFO_ACTION_OK: True, INFO_FEEDBACK: "",
                INFO_TERMINATION: None}
        if (options or {}).get("privileged"):
            info[INFO_PRIVILEGED] = {"answer": episode.metadata["answer"], "evidence": episode.metadata["evidence"]}
        return self._observation(), info

    def _observation(self) -> dict[str, Any]:
        e = self._episode
        m = e.metadata
        return {"text": e.instruction, "question": e.instruction, "video": m["video"],
                "clip_start": m["clip_start"], "clip_end": m["clip_end"],
                "duration": m["clip_end"] - m["clip_start"], "fps": m["fps"], "max_frames": m["max_frames"]}

    def step(self, action: Any):
        if self._episode is None:
            raise RuntimeError("step before reset")
        m = self._episode.metadata
        text = action if isinstance(action, str) else ""
        reply = parse_reply(text, m["clip_end"] - m["clip_start"])
        g = ground(reply.evidence, m["evidence"])
        values: dict[str, float | None] = {"unreadable": int(reply.answer is None),
                                           "span_problems": reply.refused_total}
        if g is not None:
            values.update(iou=g.iou, iop=g.iop, iog=g.iog,
                          **{f"iou_at_{str(t).replace('.', '_')}": int(g.iou >= t) for t in THRESHOLDS})
        invalid = reply.answer is None
        info = {INFO_SUCCESS: False, INFO_GC_SATISFIED: 0, INFO_GC_TOTAL: 0, INFO_INVALID_ACTIONS: int(invalid),
                INFO_TASK_TYPE: m["task_type"], INFO_ACTION_OK: not invalid,
                INFO_FEEDBACK: reply.status, INFO_TERMINATION: "answered", INFO_VALUES: values,
                INFO_ANSWER: text[:MAX_REPLY_CHARS]}
        return self._observation(), 0.0, True, False, info

    def close(self) -> None:
        self._episode = None


def oracle_reply(episode: EpisodeSpec) -> str:
    return json.dumps({"answer": episode.metadata["answer"], "evidence": episode.metadata["evidence"]})
