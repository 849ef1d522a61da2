"""The cfg_bench plugin objects (entry points in pyproject.toml); imports nothing heavy.

Metrics (docs/cfg_bench.md): multiple-choice accuracy and the rate of unreadable MC replies,
stored per question by the env; the judge's C, D, S (0-10) and the counterfactual gate, filled
in by ``harness judge`` through this suite's rubric (:mod:`envs.cfg_bench.rubric`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from envs.cfg_bench.datasets import CFG_BENCH_DATASET
from harness.params import param
from harness.plugins import AgentPlugin, SuitePlugin
from harness.scoring.policy import Metric

#: The env var naming the data folder when ``suite.params.data_dir`` is not given.
DATA_ENV = "CFG_BENCH_DATA_DIR"


@dataclass
class CFGBenchParams:
    data_dir: Optional[str] = param(
        None, results=False,
        help=f"folder holding qa_pairs.json, caption.json and videos/ (default: ${DATA_ENV}); "
             "the questions it holds enter the run through their ids")
    fps: float = param(4.0, gt=0, le=60, help="frames sampled per second of video (the paper: 4)")
    max_frames: int = param(768, ge=2, le=2048,
                            help="most frames sent for one question (768: qwen_vl_utils' cap, as the originals run)")
    sampling: str = param("qwen_vl_utils", choices=("qwen_vl_utils", "times"),
                          help="which frames: 'qwen_vl_utils' (the originals' helper: an even count spread from the "
                               "first to the last frame) or 'times' (every 1/fps s from the start); docs/cfg_bench.md")


@dataclass
class CFGBenchPromptParams:
    hint: str = param("warn", choices=("warn", "none"),
                      help="open-ended prompt: 'warn' tells the model the question may contain a false claim "
                           "(the released prompt), 'none' leaves that out (the paper's main setting)")
    visual: str = param("video", choices=("video", "frame", "none"),
                        help="what the model sees: the sampled clip, its single middle frame, or nothing (blind)")


#: The per-episode values that say which questions a metric is about (:func:`envs.cfg_bench.scoring.kinds`).
MC, OPEN, GATED = "is_mc", "is_open", "is_gated"

METRICS = (
    Metric("accuracy", "Acc", "correct", binary=True, default=True, applies=MC,
           description="multiple choice (FAU, TR, CR): questions answered with the correct option / MC questions"),
    Metric("mc_unreadable", "Unread", "unreadable", binary=True, higher_is_better=False, applies=MC,
           description="multiple choice: replies with no readable option (no JSON, no result, not an option) / MC "
                       "questions; counted wrong in accuracy"),
    Metric("cfg_s", "S", "judge_score", range=(0.0, 10.0), unit="score", judged=True, default=True, applies=OPEN,
           description="open-ended: S = (C + D) / 2, 0 where the gate failed (CIA, CRS)"),
    Metric("cfg_c", "C", "correctness", range=(0.0, 10.0), unit="score", judged=True, applies=OPEN,
           description="open-ended: the judge's correctness 0-10 (0 where the gate failed)"),
    Metric("cfg_d", "D", "detailedness", range=(0.0, 10.0), unit="score", judged=True, applies=OPEN,
           description="open-ended: the judge's detailedness 0-10 (0 where the gate failed)"),
    Metric("cfg_gate", "Gate", "gate", binary=True, judged=True, applies=GATED,
           description="CIA and CRS: answers that rejected or corrected the false premise / judged answers"),
)

SUITE = SuitePlugin(
    name="cfg_bench", target="envs.cfg_bench.suite:CFGBenchSuite", params=CFGBenchParams, default_split="all",
    prompt="envs.cfg_bench.adapter:make_adapter", prompt_params=CFGBenchPromptParams,
    datasets=(CFG_BENCH_DATASET,), metrics=METRICS, values="envs.cfg_bench.scoring:kinds",
    judge="envs.cfg_bench.rubric:make_rubric",
    # the paper's overall figures (Table 2's Avg columns) are means over tasks; `all` pools questions
    breakdowns=("tier",), mean_over="task_type",
    packages=("av",),
    summary="CFG-Bench: fine-grained action cognition as video QA (4 tiers, 11 tasks; MC accuracy, judged S/C/D, gate)")

ORACLE = AgentPlugin(
    name="oracle", suite="cfg_bench", target="envs.cfg_bench.agents:CFGBenchOracle",
    summary="cfg_bench: the reference answer (privileged; checks the pipeline)")


@dataclass
class RandomParams:
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the choices (question i's choice depends on it and the id)")


RANDOM = AgentPlugin(
    name="random", suite="cfg_bench", target="envs.cfg_bench.agents:CFGBenchRandom", params=RandomParams,
    summary="cfg_bench: a uniformly random option for MC, an empty answer for open-ended questions")
