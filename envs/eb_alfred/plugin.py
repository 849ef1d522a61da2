"""EB-ALFRED's plugin declaration: its parameters and its own agents (imports nothing heavy)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harness.scoring.record_fields import METRICS as EPISODE_METRICS
from harness.registry.datasets import Dataset, GitFile, GitFiles
from harness.params import ParamError, param
from envs.household.failures import FAILURE_CLASSES as ALFRED_FAILURE_CLASSES
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
#: auto: the model family's choice (harness/promptkit/family.py, docs/models.md).
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


#: The EmbodiedBench commit the splits and in-context examples are pinned to.
EMBODIEDBENCH_COMMIT = "b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04"
_SPLITS = "embodiedbench/envs/eb_alfred/data/splits"
_EXAMPLES = "embodiedbench/evaluator/config"

#: ``harness fetch eb_alfred`` lays out the data folder this suite reads (``data_dir``), as
#: EmbodiedBench's own checkout holds it under ``embodiedbench/envs/eb_alfred/data/``:
#:
#: - ``json_2.1.0/<task>/<trial>/pp/ann_<k>.json``: the hub dataset EmbodiedBench/EB-ALFRED,
#:   whose top level *is* the trajectory folders (EmbodiedBench's later READMEs clone it and
#:   move it to ``data/json_2.1.0``; at b247936 a folder of the same trials was in its git tree);
#: - ``splits/``: ``splits.json`` (what the suite reads; EBAlfEnv.py:31) and the six per-subset
#:   files, from EmbodiedBench's git repository at :data:`EMBODIEDBENCH_COMMIT`;
#: - ``examples/``: its in-context example files (evaluator/eb_alfred_evaluator.py:13-14), for
#:   ``examples_dir=<data folder>/examples``.
#:
#: The blob hashes are ``git rev-parse b247936:<path>``; docs/fetch.md says what was checked.
EB_ALFRED_DATASET = Dataset(
    "eb_alfred", "EmbodiedBench/EB-ALFRED", hub_dest="json_2.1.0", required=("splits/splits.json",),
    description="EB-ALFRED: trajectory files (hub), splits (6 subsets x 50) and in-context examples (EmbodiedBench "
                "at a pinned commit); suite=eb_alfred",
    git=GitFiles("EmbodiedBench/EmbodiedBench", EMBODIEDBENCH_COMMIT, checkout_env="EMBODIEDBENCH_DIR", files=(
        GitFile(f"{_SPLITS}/splits.json", "04161b294095f5ef58c08b197d971393a0b9c301", "splits/splits.json"),
        GitFile(f"{_SPLITS}/base.json", "df3a3df285c244f4f757d2c698c6a70499a72c63", "splits/base.json"),
        GitFile(f"{_SPLITS}/common_sense.json", "d7ebf989fad46169b7d07cea29d0f1750227ac3b", "splits/common_sense.json"),
        GitFile(f"{_SPLITS}/complex_instruction.json", "bef0bdc6d1e81de3513d9a4baf67019769246828",
                "splits/complex_instruction.json"),
        GitFile(f"{_SPLITS}/long_horizon.json", "aca5e3bca0bf927f3b95370e83a22f04e75c6a86", "splits/long_horizon.json"),
        GitFile(f"{_SPLITS}/spatial.json", "61bbabb73517657cc5701807890527295f239122", "splits/spatial.json"),
        GitFile(f"{_SPLITS}/visual_appearance.json", "a0b394862185c7353cce0d6efe787a81e33d7fdd",
                "splits/visual_appearance.json"),
        GitFile(f"{_EXAMPLES}/alfred_examples.json", "dfef5abb96fec437011def3d4d8c53e3be81b485",
                "examples/alfred_examples.json"),
        GitFile(f"{_EXAMPLES}/alfred_long_horizon_examples.json", "ed53e538e1fdb335f0297c7861185fab9ef5a34f",
                "examples/alfred_long_horizon_examples.json"),
    )))

SUITE = SuitePlugin(
    metrics=EPISODE_METRICS, values="harness.scoring.record_fields:values",
    name="eb_alfred", target="envs.eb_alfred.suite:EBAlfredSuite", params=EBAlfredParams, default_split="seen",
    failures="envs.eb_alfred.failures:RULES", failure_classes=ALFRED_FAILURE_CLASSES,
    # No hub commit is pinned: the first fetch locks one (harness/registry/datasets.py); --revision pins another.
    datasets=(EB_ALFRED_DATASET,),
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
