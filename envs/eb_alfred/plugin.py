"""EB-ALFRED's plugin declaration: its parameters and its own agents (imports nothing heavy)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harness.fetch import Dataset
from harness.params import ParamError, param
from harness.plugins import AgentPlugin, SuitePlugin

#: What to do with an official episode the backend cannot build (unknown object,
#: receptacle or floor plan): fail the run before it starts, or leave it out and say so.
BAD_EPISODE_POLICIES = ("error", "skip_and_report")


@dataclass
class EBAlfredParams:
    data_dir: Optional[str] = param(
        None, results=False,
        help="EmbodiedBench's EB-ALFRED data folder (splits/splits.json, json_2.1.0/); null: "
             "$EB_ALFRED_DATA_DIR, else the folder `harness fetch eb_alfred` filled. Only the six official "
             "subsets need it; the hash of what is loaded is in the run identity, not the path")
    backend: str = param("household", choices=("household", "thor"),
                         help="household: the embedded ALFRED-logic engine; thor: AI2-THOR 2.1.0 (extra `thor`)")
    render: bool = param(True, help="draw the observation image (agents that read no images skip it anyway)")
    image: str = param("frame", choices=("frame", "annotated"),
                       help="household image: frame (only what a camera frame shows: receptacles in view from the "
                            "start pose, then what the agent faces; no text) or annotated (labels, state words, "
                            "holding panel); the text observation is there either way")
    generated_per_split: int = param(
        500, ge=0, le=100_000, results=False,
        help="episodes of each generated split (seen, unseen); episode i depends only on the generator seed "
             "and i, so a longer split extends a shorter one and resuming with more runs only the new ones")
    generator_seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the generated splits' episodes")
    on_bad_episode: str = param("error", choices=BAD_EPISODE_POLICIES, results=False,
                                help="an official episode the backend cannot build: error (stop before running) "
                                     "or skip_and_report (left out, listed, its id in the run identity)")
    restore_scenes: bool = param(True, help="official episodes start from the scene facts of their trajectory file")


#: The parsers of a model's text (envs/eb_alfred/parse.py).
PARSERS = ("embodiedbench", "embodiedbench_remote", "lenient")
#: ``ours`` (our wording of the prompt) or ``embodiedbench`` (the paper's, read from a checkout).
PROMPT_SOURCES = ("ours", "embodiedbench")
#: EmbodiedBench configs/eb-alf.yaml: ``n_shots: 10``.
DEFAULT_NUM_EXAMPLES = 10
#: EmbodiedBench configs/eb-alf.yaml: ``resolution: 500`` (frame width = height).
DEFAULT_IMAGE_SIZE = 500
#: auto: the model family's choice (planners/vlm/family.py, docs/models.md).
AUTO_FLAG = ("auto", "true", "false")


@dataclass
class EBAlfredPromptParams:
    """The settings of EB-ALFRED's prompt and parser for a VLM planner (envs/eb_alfred/prompt.py)."""

    parser: str = param("auto", choices=("auto", *PARSERS),
                        help="embodiedbench (EmbodiedBench's json_to_action), embodiedbench_remote (its "
                             "remote-family replacements first), lenient (ours); auto: by model family")
    prompt_source: str = param("ours", choices=PROMPT_SOURCES,
                               help="ours, or embodiedbench: the paper's prompt text read from embodiedbench_dir")
    embodiedbench_dir: Optional[str] = param(
        None, kind="dir", results=False,
        help="an EmbodiedBench checkout (prompt_source=embodiedbench); the hash of what is read from it is in "
             "the run identity, not the path")
    examples_dir: Optional[str] = param(
        None, kind="dir", results=False,
        help="a folder with alfred_examples.json and alfred_long_horizon_examples.json (null: ours); the hash of "
             "the examples in use is in the run identity, not the path")
    num_examples: int = param(DEFAULT_NUM_EXAMPLES, ge=0, le=1000,
                              help="in-context examples (EmbodiedBench n_shots)")
    image_size: Optional[int] = param(
        DEFAULT_IMAGE_SIZE, ge=1, le=8192,
        help="side of the square image sent (EmbodiedBench resolution); null: as rendered")
    output_template: Optional[str] = param(
        "auto", choices=AUTO_FLAG,
        help="append the output JSON layout to the prompt; auto (or null): by model family")
    feedback: bool = param(True, help="env feedback in the history lines")
    mode: str = param("single", choices=("single", "chat"),
                      help="single (EmbodiedBench: one user turn) or chat (the history as earlier turns)")

    def __post_init__(self) -> None:
        if self.prompt_source == "embodiedbench":
            if self.mode != "single":
                raise ParamError("mode", "must be single with prompt_source=embodiedbench (EmbodiedBench's "
                                         "single-turn layout is the only one read from a checkout)")
            if not self.embodiedbench_dir:
                raise ParamError("prompt_source=embodiedbench", "needs embodiedbench_dir=<your EmbodiedBench checkout>")
            if self.examples_dir:
                raise ParamError("examples_dir", "must be null with prompt_source=embodiedbench (it reads the "
                                                 "checkout's examples)")


SUITE = SuitePlugin(
    name="eb_alfred", target="envs.eb_alfred.suite:EBAlfredSuite", params=EBAlfredParams, default_split="seen",
    failures="envs.eb_alfred.failures:RULES",
    # The hub repository EmbodiedBench's README names ("Dataset" section). No commit is pinned
    # here: the first fetch locks one (harness/fetch.py); --revision pins another.
    datasets=(Dataset("eb_alfred", "EmbodiedBench/EB-ALFRED", required=("splits/splits.json",),
                      description="EB-ALFRED: splits (6 subsets x 50), trajectory files, in-context examples; "
                                  "suite=eb_alfred"),),
    packages=("ai2thor", "scipy"),  # scipy: the thor backend's KD-tree of reachable positions (find)
    prompt="envs.eb_alfred.prompt:make_adapter", prompt_params=EBAlfredPromptParams,
    summary="EmbodiedBench EB-ALFRED: 6 official subsets x 50 + generated seen/unseen splits (backend: household)")


@dataclass
class OracleParams:
    max_plan_length: int = param(60, ge=1, le=10_000, help="longest expert plan asked for at once")


@dataclass
class OracleJSONParams:
    parser: str = param("embodiedbench", choices=PARSERS, help="the VLM parser that reads the oracle's JSON back")
    max_plan_length: int = param(60, ge=1, le=10_000, help="longest expert plan asked for at once")


ORACLE = AgentPlugin(
    name="oracle", suite="eb_alfred", target="envs.eb_alfred.agents:OraclePlanner", params=OracleParams,
    summary="EB-ALFRED: expert plans in the skill language from the true state (upper bound; privileged)")
ORACLE_JSON = AgentPlugin(
    name="oracle_json", suite="eb_alfred", target="envs.eb_alfred.oracle_json:OracleJSONPlanner",
    params=OracleJSONParams,
    summary="EB-ALFRED: the oracle's plan as model JSON through the VLM parser (pipeline check)")
