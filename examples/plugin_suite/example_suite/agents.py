"""The example suite's own agents: its oracle (``planner=oracle`` on ``suite=example``)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.interfaces import AgentRequest
from harness.params import parse
from harness.types import INFO_PRIVILEGED, EpisodeSpec

from example_suite.plugin import OracleParams


class ExampleOracle:
    """The shortest walk to the target, read from the true state."""

    name = "example_oracle"
    #: Needs info["privileged_state"]: the runner resets envs with privileged=True for it.
    privileged = True
    reads_images = False
    action_kinds = frozenset({"text"})

    def __init__(self, **values: Any) -> None:
        self.params = parse(OracleParams, values)

    def identity(self) -> Mapping[str, Any]:
        return {"name": self.name}  # derived facts only; the parameters come from self.params

    def reset(self, episode: EpisodeSpec) -> None:
        pass  # stateless: each plan is computed from the request's true state

    def act(self, requests: Sequence[AgentRequest]) -> list[list[str]]:
        plans = []
        for r in requests:
            state = r.info[INFO_PRIVILEGED]
            gap = state["target"] - state["position"]
            plans.append((["right"] if gap > 0 else ["left"]) * min(abs(gap), self.params.max_plan_length))
        return plans
