"""EB-ALFRED's plugin declaration: its parameters and its own agents (imports nothing heavy)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harness.fetch import Dataset
from harness.params import param
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
    generated_per_split: int = param(
        500, ge=0, le=100_000, results=False,
        help="episodes of each generated split (seen, unseen); episode i depends only on the generator seed "
             "and i, so a longer split extends a shorter one and resuming with more runs only the new ones")
    generator_seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the generated splits' episodes")
    on_bad_episode: str = param("error", choices=BAD_EPISODE_POLICIES, results=False,
                                help="an official episode the backend cannot build: error (stop before running) "
                                     "or skip_and_report (left out, listed, its id in the run identity)")
    restore_scenes: bool = param(True, help="official episodes start from the scene facts of their trajectory file")


SUITE = SuitePlugin(
    name="eb_alfred", target="envs.eb_alfred.suite:EBAlfredSuite", params=EBAlfredParams, default_split="seen",
    failures="envs.eb_alfred.failures:RULES",
    # The hub repository EmbodiedBench's README names ("Dataset" section). No commit is pinned
    # here: the first fetch locks one (harness/fetch.py); --revision pins another.
    datasets=(Dataset("eb_alfred", "EmbodiedBench/EB-ALFRED", required=("splits/splits.json",),
                      description="EB-ALFRED: splits (6 subsets x 50), trajectory files, in-context examples; "
                                  "suite=eb_alfred"),),
    packages=("ai2thor",),
    summary="EmbodiedBench EB-ALFRED: 6 official subsets x 50 + generated seen/unseen splits (backend: household)")


@dataclass
class OracleParams:
    max_plan_length: int = param(60, ge=1, le=10_000, help="longest expert plan asked for at once")


#: The parsers of a model's text (planners/vlm/parse.py PARSER_MODES).
PARSERS = ("embodiedbench", "embodiedbench_remote", "lenient")


@dataclass
class OracleJSONParams:
    parser: str = param("embodiedbench", choices=PARSERS, help="the VLM parser that reads the oracle's JSON back")
    max_plan_length: int = param(60, ge=1, le=10_000, help="longest expert plan asked for at once")


ORACLE = AgentPlugin(
    name="oracle", suite="eb_alfred", target="envs.eb_alfred.agents:OraclePlanner", params=OracleParams,
    summary="EB-ALFRED: expert plans in the skill language from the true state (upper bound; privileged)")
ORACLE_JSON = AgentPlugin(
    name="oracle_json", suite="eb_alfred", target="planners.oracle_json:OracleJSONPlanner", params=OracleJSONParams,
    summary="EB-ALFRED: the oracle's plan as model JSON through the VLM parser (pipeline check)")
