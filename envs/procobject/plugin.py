"""The procobject plugin objects (entry points in pyproject.toml); imports nothing heavy.

Metrics (docs/procobject.md): set-level grounding per question (mIoU, mIoP, mIoG, IoU@0.3,
IoU@0.5), the rate of unreadable replies and of refused spans, stored per question by the env;
the judge's J (0-5), filled in by ``harness judge`` (:mod:`envs.procobject.rubric`); sentence
similarity and BERTScore F1, filled in by ``harness judge`` with a local scorer
(``judge=sentence_similarity`` / ``judge=bertscore``, :mod:`envs.procobject.similarity`), or
left without a value (not computed) where its model can't be loaded, never a made-up number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from envs.procobject.datasets import PROCOBJECT_DATASET
from harness.params import param
from harness.plugins import AgentPlugin, SuitePlugin
from harness.scoring.policy import Metric

#: The env var naming the data folder when ``suite.params.data_dir`` is not given.
DATA_ENV = "PROCOBJECT_DATA_DIR"


@dataclass
class ProcObjectParams:
    data_dir: Optional[str] = param(
        None, results=False,
        help=f"folder holding data/testing.json and the videos (default: ${DATA_ENV})")
    fps: float = param(4.0, gt=0, le=60, help="frames sampled per second of the clip")
    max_frames: int = param(64, ge=1, le=2048, help="most frames sent for one question (evenly thinned beyond)")
    sampling: str = param("times", choices=("times", "qwen_vl_utils"),
                          help="which frames: 'times' (every 1/fps s from the clip's start) or 'qwen_vl_utils' "
                               "(the Qwen-VL helper's rule); docs/procobject.md")


@dataclass
class ProcObjectPromptParams:
    visual: str = param("video", choices=("video", "frame", "none"),
                        help="what the model sees: the sampled clip, its single middle frame, or nothing (blind)")


#: The per-question value the grounding metrics apply where 1 (:func:`envs.procobject.grounding.values`).
GROUNDED = "has_reference"

METRICS = (
    Metric("miou", "mIoU", "iou", unit="iou", default=True, applies=GROUNDED,
           description="set-level IoU of the merged predicted and reference spans, mean over the questions with "
                       "a reference (an empty or unreadable prediction scores 0)"),
    Metric("miop", "mIoP", "iop", unit="iou", applies=GROUNDED,
           description="intersection over the predicted length, mean"),
    Metric("miog", "mIoG", "iog", unit="iou", applies=GROUNDED,
           description="intersection over the reference length, mean"),
    Metric("iou_at_0_3", "IoU@0.3", "iou_at_0_3", binary=True, applies=GROUNDED,
           description="questions with IoU >= 0.3"),
    Metric("iou_at_0_5", "IoU@0.5", "iou_at_0_5", binary=True, applies=GROUNDED,
           description="questions with IoU >= 0.5"),
    Metric("no_reference", "NoRef", "no_reference", binary=True, higher_is_better=False,
           description="questions without a usable reference span (none given, or every one past the clip): "
                       "left out of the grounding metrics, counted here"),
    Metric("reply_unreadable", "Unread", "unreadable", binary=True, higher_is_better=False,
           description="replies with no readable JSON answer (kept in every mean, grounding 0)"),
    Metric("span_problems", "Refused", "span_problems", unit="count", range=(0.0, 1e6), higher_is_better=False,
           description="spans refused per question (negative, reversed, past the clip, not a pair)"),
    Metric("procobject_j", "J", "judge_score", range=(0.0, 5.0), unit="score", judged=True, default=True,
           description="judge score 0-5: mean of contextual integration, detail orientation, contextual "
                       "understanding, temporal understanding"),
    Metric("sentence_similarity", "SentSim", "sentence_similarity", unit="score", range=(-1.0, 1.0), judged=True,
           description="cosine of the answer's and the reference's sentence-transformers embeddings "
                       "(harness judge OUT judge=sentence_similarity; the model in its identity)"),
    Metric("bertscore_f1", "BERTScore", "bertscore_f1", unit="score", range=(-1.0, 1.0), judged=True,
           description="bert-score F1 of the answer against the reference "
                       "(harness judge OUT judge=bertscore; the model and layer in its identity)"),
)

SUITE = SuitePlugin(
    name="procobject", target="envs.procobject.suite:ProcObjectSuite", params=ProcObjectParams,
    default_split="test", prompt="envs.procobject.adapter:make_adapter", prompt_params=ProcObjectPromptParams,
    datasets=(PROCOBJECT_DATASET,), metrics=METRICS, judge="envs.procobject.rubric:make_rubric",
    values="envs.procobject.grounding:values",
    # the temporal-search pattern (needle / multi_hop) and whether a usable reference exists (given / none)
    breakdowns=("pattern", "reference"),
    packages=("av",),
    summary="ProcObject-10K: grounded procedural VideoQA (answer + evidence spans; mIoU/IoP/IoG, judged J)")

ORACLE = AgentPlugin(
    name="oracle", suite="procobject", target="envs.procobject.agents:ProcObjectOracle",
    summary="procobject: the reference answer and evidence (privileged; checks the pipeline)")
