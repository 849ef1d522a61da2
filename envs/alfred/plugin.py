"""ALFRED's plugin declaration: its parameters and its own agents (imports nothing heavy)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harness.scoring.record_fields import METRICS as EPISODE_METRICS
from harness.params import param
from envs.household.failures import FAILURE_CLASSES as ALFRED_FAILURE_CLASSES
from harness.plugins import AgentPlugin, SuitePlugin

BACKENDS = ("household", "thor")


@dataclass
class AlfredParams:
    alfred_data_dir: Optional[str] = param(
        None, results=False,
        help="ALFRED's data folder (json_2.1.0 with valid_seen/, valid_unseen/, tests_*/); null: "
             "$ALFRED_DATA_DIR. Only those splits need it")
    eb_data_dir: Optional[str] = param(
        None, results=False,
        help="EmbodiedBench's EB-ALFRED data folder (json_2.1.0/), for split eb_valid_seen; null: $EB_ALFRED_DATA_DIR")
    backend: str = param("household", choices=BACKENDS,
                         help="household: the embedded ALFRED-logic engine; thor: AI2-THOR 2.1.0 (extra `thor`)")
    render: bool = param(True, help="draw the observation image (agents that read no images skip it anyway)")
    image: str = param("frame", choices=("frame", "annotated"),
                       help="household image: frame (only what a camera frame shows: receptacles in view from the "
                            "start pose, then what the agent faces; no text) or annotated (labels, state words, "
                            "holding panel); the text observation is there either way")
    generated_per_split: int = param(
        500, ge=0, le=100_000, results=False,
        help="episodes of each generated split (seen, unseen); a longer split extends a shorter one")
    generator_seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the generated splits' episodes")
    restore_scenes: bool = param(True, help="data episodes start from the scene facts of their trajectory file")
    x_display: Optional[str] = param(None, results=False, help="thor: the X display to start Unity on (null: Xvfb)")
    step_timeout_s: float = param(120.0, gt=0, le=86_400, results=False,
                                  help="thor: seconds one simulator call may take before Unity is restarted")
    max_restarts: int = param(2, ge=0, le=100, results=False,
                              help="thor: Unity restarts within one episode before it becomes an error record")


#: FLARE: 9 in-context examples per query.
DEFAULT_K = 9


@dataclass
class AlfredPromptParams:
    """The settings of ALFRED's FLARE-style triplet prompt for a VLM planner (envs/alfred/prompt.py)."""

    alfred_examples: Optional[str] = param(
        None, kind="path", results=False,
        help="the in-context example pool: a JSON list of {instruction, triplets} or a folder of ALFRED "
             "trajectories (null: none); the pool's hash is in the run identity, not the path")
    alfred_k: int = param(DEFAULT_K, ge=0, le=1000, help="examples retrieved per query (FLARE: 9)")
    grounded_replanning: bool = param(True, help="a class that cannot be found is replaced by the most similar "
                                                 "visible one without asking the model again")


SUITE = SuitePlugin(
    metrics=EPISODE_METRICS, values="harness.scoring.record_fields:values",
    name="alfred", target="envs.alfred.suite:AlfredSuite", params=AlfredParams, default_split="seen",
    failures="envs.alfred.failures:RULES", failure_classes=ALFRED_FAILURE_CLASSES, packages=("ai2thor",),
    prompt="envs.alfred.prompt:make_adapter", prompt_params=AlfredPromptParams,
    summary="ALFRED seen/unseen with FLARE-style triplets: generated splits, EmbodiedBench's 130 valid_seen "
            "trials, ALFRED data (backend: household)")


@dataclass
class AlfredOracleParams:
    max_plan_length: int = param(200, ge=1, le=10_000, help="longest low-level plan asked for at once")


ORACLE = AgentPlugin(
    name="oracle", suite="alfred", target="envs.alfred.agents:AlfredOraclePlanner", params=AlfredOracleParams,
    summary="ALFRED: FLARE triplets from pddl_params and the true state (privileged)")
