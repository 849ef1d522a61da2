"""The cfg_bench suite: one CFG-Bench question per episode, answered in one step.

Episodes come from a data folder laid out as the originals' scripts read it (docs/cfg_bench.md):
``suite.params.data_dir`` or ``$CFG_BENCH_DATA_DIR``. ``reset`` shows the question (with the
options for multiple choice), the video's path and the clip's bounds (the whole video); the one
``step`` takes the answer text and ends the episode. Multiple-choice answers are scored here
(``info["values"]``: ``correct`` and ``unreadable``, 0/1, by the strict rule of
:func:`envs.cfg_bench.scoring.extract_choice`); open-ended answers are kept
(``info["answer"]``) for the judge. The env never decodes the video: a missing video fails that
question's record (an env error), and the prompt adapter decodes it only when the model sees it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.spaces import AnswerText

from envs import video_qa
from envs.cfg_bench import data as D
from envs.cfg_bench.plugin import DATA_ENV, METRICS, CFGBenchParams
from envs.cfg_bench.prompt import PROMPT_VERSION, open_answer
from envs.cfg_bench.scoring import extract_choice, mc_correct
from harness.util.media import sampling_identity
from harness.params import parse
from harness.types import EpisodeSpec

VERSION = "1.1.0"
#: Longest answer text kept in the record.
MAX_ANSWER_CHARS = 8000
#: The values of an open question without an answer: None for each judged metric's value.
NO_ANSWER: dict[str, None] = {m.value: None for m in METRICS if m.judged}


def data_root(data_dir: str | None) -> Path:
    """The data folder, or a one-line DataError saying how to give it."""
    path = video_qa.data_root("cfg_bench", data_dir, DATA_ENV, D.MissingData)
    if not (path / D.QA_FILE).is_file():
        raise D.MissingData(f"cfg_bench data folder {path} has no {D.QA_FILE} (harness fetch cfg_bench lays it out)")
    return path


class CFGBenchSuite:
    name = "cfg_bench"
    version = VERSION
    action_kind = "text"

    def __init__(self, **values: Any) -> None:
        self.params = parse(CFGBenchParams, values)
        self._questions: list[D.Question] | None = None

    def _load(self) -> tuple[Path, list[D.Question]]:
        root = data_root(self.params.data_dir)
        if self._questions is None:
            self._questions = D.load_questions(root)
        return root, self._questions

    def splits(self) -> Sequence[str]:
        return D.SPLITS

    def canonical_split(self, split: str) -> str:
        """A task code in any case is its split (``FAU`` -> ``fau``), so both run as one identity."""
        name = split.strip()
        return name.lower() if name.upper() in D.TASKS else name

    def protocol(self, split: str) -> Mapping[str, Any]:
        return {"max_steps": 1, "frames": sampling_identity(float(self.params.fps), int(self.params.max_frames),
                                                             rule=str(self.params.sampling)),
                "prompt_version": PROMPT_VERSION, "mc_rule": "json result == option text (stripped)",
                "tasks": sorted({q for q in D.TASKS if split == "all" or split.upper() == q
                                 or q in D.TIERS.get(split, ())})}

    def episodes(self, split: str) -> Sequence[EpisodeSpec]:
        if split not in D.SPLITS:
            try:
                D.select([], split)  # the one-line unknown-split message (with a suggestion)
            except D.DataError as exc:
                raise KeyError(str(exc)) from None
        root, questions = self._load()
        captions = D.load_captions(root) if (root / D.CAPTION_FILE).is_file() else {}
        index = D.video_index(root)
        out = []
        for i, q in enumerate(D.select(questions, split)):
            video = D.find_video(index, q.video_name)
            out.append(EpisodeSpec(
                suite=self.name, split=split, episode_id=q.qid, seed=0, instruction=q.question,
                metadata={"task_type": q.task_type, "tier": q.tier, "options": list(q.options),
                          "correct_answer": q.correct_answer, "video_name": q.video_name,
                          "video": str(video) if video is not None else None,
                          "caption": D.caption_for(captions, q) or "", "question_key": q.question_key,
                          "fps": float(self.params.fps), "max_frames": int(self.params.max_frames),
                          "sampling": str(self.params.sampling)}))
        return out

    def make_env(self) -> "CFGBenchEnv":
        return CFGBenchEnv()


def question_of(episode: EpisodeSpec) -> D.Question:
    m = episode.metadata
    return D.Question(qid=episode.episode_id, video_name=m["video_name"], question=episode.instruction,
                      task_type=m["task_type"], correct_answer=m["correct_answer"],
                      options=tuple(m.get("options") or ()), question_key=m.get("question_key", ""))


class CFGBenchEnv(video_qa.VideoQAEnv):
    """One question per episode: ``reset`` shows it, the one ``step`` answers it and ends it."""

    action_space = AnswerText(max_length=MAX_ANSWER_CHARS)  # a free-text answer (harness.spaces)
    suite, video_key, video_folder = "cfg_bench", "video_name", "the data folder's videos/"

    def privileged(self, episode: EpisodeSpec) -> Any:
        return {"answer": episode.metadata["correct_answer"]}

    def observation(self, episode: EpisodeSpec) -> dict[str, Any]:
        m = episode.metadata
        return {"text": episode.instruction, "question": episode.instruction, "options": list(m.get("options") or ()),
                "task_type": m["task_type"], "video": m["video"], "clip_start": 0.0, "clip_end": None,
                "fps": m["fps"], "max_frames": m["max_frames"],
                "sampling": m["sampling"]}

    def answer(self, episode: EpisodeSpec, action: Any) -> video_qa.Answered:
        m = episode.metadata
        text = video_qa.text_of(action)
        stored = text.strip()
        if m["options"]:
            answer = extract_choice(text, m["options"])
            correct = mc_correct(answer, m["correct_answer"])
            return video_qa.Answered({"correct": int(correct), "unreadable": int(not answer.readable)}, correct,
                                     not answer.readable, answer.problem or "answered", stored[:MAX_ANSWER_CHARS])
        # An empty answer or unusable model output: answered, but not validly; a JSON reply whose
        # answer field is absent or empty is no answer either (open_answer). No answer: None for
        # each judged value (the env's "no answer", harness.judging.views.unanswered): counted as
        # the metric's missing value (0), never sent to a judge.
        stored = open_answer(stored)
        return video_qa.Answered({} if stored else dict(NO_ANSWER), False, not stored,
                                 "answered" if stored else "empty answer", stored[:MAX_ANSWER_CHARS])
