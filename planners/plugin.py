"""The planners that serve every suite whose actions they produce: declarations only
(imports nothing heavy). Each suite's own oracle and random agent are in its envs package."""

from __future__ import annotations

from dataclasses import dataclass

from harness.params import param
from harness.plugins import AgentPlugin


@dataclass
class RandomParams:
    seed: int = param(0, ge=0, le=2**31 - 1, help="seed of the draws (with each episode's key)")


RANDOM = AgentPlugin(
    name="random", target="planners.random_planner:RandomPlanner", params=RandomParams,
    summary="one uniformly random action of the observation's action list per call")
VLM = AgentPlugin(
    name="vlm", target="planners.vlm.planner:VLMPlanner", extra="models",
    summary="a vision-language model (backend hf: in process; openai: a server)")
