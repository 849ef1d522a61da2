"""The plugin objects the harness finds through entry points (pyproject.toml).

This module imports nothing heavy: ``harness list`` reads the declarations without
importing the suite's code; the ``target`` strings are imported only when a run builds them.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.interfaces import FailureClass
from harness.params import param
from harness.plugins import AgentPlugin, SuitePlugin
from harness.scoring import Metric, record_metrics


@dataclass
class ExampleParams:
    """The suite's parameters: validation, defaults, docs and run identity come from here."""

    size: int = param(21, ge=3, le=1001, help="points on the line (positions 0 .. size-1)")
    generator_seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the episodes' start and target positions")
    show_distance: bool = param(False, help="the observation text also says how far away the target is")
    episodes_per_split: int = param(
        10, ge=1, le=100_000, results=False,
        help="episodes of each split; episode i depends only on the seed and i, so a longer split extends "
             "a shorter one (hence not part of the run identity)")


@dataclass
class ExamplePromptParams:
    """The prompt adapter's settings (``planner=vlm`` on this suite)."""

    max_moves: int = param(5, ge=1, le=100, help="most moves read from one reply")


#: The failure classes its reader names, beyond the core's generic ones.
FAILURE_CLASSES = (
    FailureClass("walked_away", "the step limit came with the agent farther from the target than at the start",
                 order=100, colour="#ff725c"),
)


@dataclass
class OracleParams:
    max_plan_length: int = param(100, ge=1, le=10_000, help="longest plan handed out in one call")


#: How it is scored: the record's own metrics (SR, GC, ...: harness.scoring.record_metrics) and one of its
#: own, a value its env delivers in every info (info["values"]). The runner refuses a value outside the
#: declared range, or one the env never delivers, as an error of that episode.
METRICS = (
    *record_metrics(),
    Metric("closeness", "Close", "closeness",
           description="how much of the start's distance to the target was walked off by the end (0 where the "
                       "agent ends farther away than it started)"),
)

SUITE = SuitePlugin(
    name="example", target="example_suite.suite:ExampleSuite", params=ExampleParams, default_split="test",
    prompt="example_suite.prompt:make_adapter", prompt_params=ExamplePromptParams,
    failures="example_suite.failures:ExampleFailures", failure_classes=FAILURE_CLASSES,
    metrics=METRICS, values="harness.scoring:record_values",
    summary="example plugin: walk left/right along a number line to a target")

ORACLE = AgentPlugin(
    name="oracle", suite="example", target="example_suite.agents:ExampleOracle", params=OracleParams,
    summary="example plugin: the shortest walk to the target, from the true state (privileged)")


# --- A second suite, of the one-step kind: one multiple-choice question per episode ---------


@dataclass
class QAParams:
    generator_seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the questions")
    questions: int = param(
        12, ge=1, le=100_000, results=False,
        help="questions in the split; question i depends only on the seed and i (not in the run identity)")


QA_SUITE = SuitePlugin(
    name="example_qa", target="example_suite.qa:QASuite", params=QAParams, default_split="test",
    judge="example_suite.rubric:make_rubric",
    summary="example plugin: one multiple-choice arithmetic question per episode (one-step, scored)",
    metrics=(
        Metric("accuracy", "Acc", "correct", binary=True, default=True,
               description="accuracy: questions answered with the right choice / questions"),
        Metric("judge_score", "Judge", "judge_score", range=(0.0, 10.0), unit="score", judged=True,
               description="a judge's 0-10 score of the answer (absent until a judge scored the run)"),
    ))

QA_ORACLE = AgentPlugin(
    name="oracle", suite="example_qa", target="example_suite.qa:QAOracle",
    summary="example plugin: the right choice, from the true state (privileged)")
