"""EB-Manipulation's plugin declaration: its parameters and its own agents (imports nothing heavy)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harness.scoring.record_fields import METRICS as EPISODE_METRICS
from harness.registry.datasets import Dataset
from harness.params import NoParams, ParamError, param
from harness.plugins import AgentPlugin, SuitePlugin

#: The original's image size, and the largest the twin renders (envs/eb_manipulation/sim.py).
IMAGE_SIZE = 500
MAX_IMAGE_SIZE = 1024


@dataclass
class EBManipulationParams:
    backend: str = param("mujoco", choices=("mujoco",),
                         help="mujoco: the MuJoCo twin (robosuite 1.4 Panda); EmbodiedBench's CoppeliaSim env is "
                              "envs.eb_manipulation.coppelia, outside the runner")
    render: bool = param(True, help="the front camera image (skipped anyway for agents that read no images)")
    image_size: int = param(IMAGE_SIZE, ge=16, le=MAX_IMAGE_SIZE, help="rendered image side in pixels (the original's 500)")
    annotate: bool = param(True, help="numbered object markers and the axis overlay on the image")
    wrist: bool = param(False, help="also the wrist camera")
    replan_on_failure: bool = param(False, help="false = the original: a failed motion does not interrupt the plan")
    generator_seed: int = param(0, ge=0, le=2**31 - 1,
                                help="0: the fixed evaluation set; another seed generates other scenes")


#: What unusable model output becomes: ``random`` (EmbodiedBench's rule, the default) or ``invalid``.
ON_BAD_OUTPUT = ("random", "invalid")


#: ``ours`` (our wording and examples) or ``embodiedbench`` (the original's, read from a checkout).
PROMPT_SOURCES = ("ours", "embodiedbench")
#: auto: the model family's choice (harness/promptkit/family.py).
AUTO_FLAG = ("auto", "true", "false")


@dataclass
class EBManipulationPromptParams:
    """The settings of EB-Manipulation's prompt and parser for a VLM planner (envs/eb_manipulation/prompt.py)."""

    prompt_source: str = param(
        "ours", choices=PROMPT_SOURCES,
        help="ours, or embodiedbench: the original's prompt text and in-context examples read from "
             "embodiedbench_dir (envs/eb_manipulation/prompt_embodiedbench.py)")
    embodiedbench_dir: Optional[str] = param(
        None, kind="dir", results=False,
        help="an EmbodiedBench checkout (prompt_source=embodiedbench); null: $EMBODIEDBENCH_DIR; the hash of "
             "what is read from it is in the run identity, not the path")
    manipulation_examples: Optional[str] = param(
        None, kind="file", results=False,
        help="our examples (null) or a file in their JSON layout or EmbodiedBench's "
             "evaluator/config/eb_manipulation_example.py (read, never executed); the hash of the examples is "
             "in the run identity, not the path")
    output_template: Optional[str] = param(
        "auto", choices=AUTO_FLAG,
        help="append the output JSON layout to the prompt; auto (or null): by model family, as the original "
             "(claude, InternVL, Qwen2-VL-72B-Instruct only); true: every model (the twin's earlier default)")
    reply_cleanup: Optional[str] = param(
        "auto", choices=AUTO_FLAG,
        help="the original's quote and code-fence replacements on the reply before parsing; auto (or null): by "
             "model family (its remote Qwen2-VL-72B, Llama-3.2-90B and InternVL2.5)")
    manipulation_shots: int = param(4, ge=0, le=100, help="in-context examples of the episode's task class")
    on_bad_output: str = param("random", choices=ON_BAD_OUTPUT,
                               help="random (EmbodiedBench: a seeded random action, executed and kept in the "
                                    "history) or invalid (an invalid action, no env step)")
    image_size: Optional[int] = param(IMAGE_SIZE, ge=1, le=MAX_IMAGE_SIZE,
                                      help="side of the square image sent (the original's 500); null: as rendered")

    def __post_init__(self) -> None:
        if self.prompt_source == "embodiedbench" and self.manipulation_examples:
            raise ParamError("manipulation_examples", "must be null with prompt_source=embodiedbench (it reads the "
                                                      "checkout's examples)")


SUITE = SuitePlugin(
    metrics=EPISODE_METRICS, values="harness.scoring.record_fields:values",
    name="eb_manipulation", target="envs.eb_manipulation.suite:EBManipulationSuite", params=EBManipulationParams,
    default_split="base", extra="eb_manipulation", modules=("robosuite", "mujoco"), packages=("robosuite", "mujoco"),
    # The hub dataset EmbodiedBench's README names at b247936 (README.md:199-200: clone it, move its
    # data/ into envs/eb_manipulation/); only data/ is taken, kept at data/ (the first fetch locks a
    # commit). The MuJoCo twin reads none of it: it is the input of envs.eb_manipulation.coppelia
    # (official_episodes(<folder>/data, subset)), EmbodiedBench's own CoppeliaSim env.
    datasets=(Dataset("eb_manipulation", "markyyds/eb_manipulation_dataset", allow_patterns=("data/*",),
                      description="EB-Manipulation's original episodes (data/<subset>/eval/<task>/variation<V>/"
                                  "episodes/episode<E>/: CoppeliaSim scenes, configs) for EmbodiedBench's CoppeliaSim "
                                  "env (envs.eb_manipulation.coppelia); suite=eb_manipulation (the MuJoCo twin) "
                                  "reads none of it"),),
    prompt="envs.eb_manipulation.prompt:make_adapter", prompt_params=EBManipulationPromptParams,
    summary="EmbodiedBench EB-Manipulation on a MuJoCo twin: 5 subsets, 228 episodes (backend: mujoco)")
@dataclass
class RandomParams:
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the draws (with each episode's key)")


ORACLE = AgentPlugin(
    name="oracle", suite="eb_manipulation", target="envs.eb_manipulation.agents:OracleAgent", params=NoParams,
    extra="eb_manipulation",
    summary="EB-Manipulation: discretised actions from the true state (privileged)")
RANDOM = AgentPlugin(
    name="random", suite="eb_manipulation", target="envs.eb_manipulation.agents:RandomAgent", params=RandomParams,
    extra="eb_manipulation",
    summary="EB-Manipulation: one random in-range 7-integer action per call")
