"""``lerobot``: a LeRobot ``PreTrainedPolicy`` in-process (checkpoint directory or
hub id; LeRobot's own pre/post-processors; see :mod:`policies.lerobot_server`
for the observation mapping, which this shares).

Only usable where lerobot imports beside the harness: lerobot 0.6.1 needs
Python >= 3.12 and torch < 2.12, so it does **not** install in the harness's
standard environment (Python 3.11, torch 2.13; no ``lerobot`` extra). The
supported route there is the server: ``python -m policies.lerobot_server`` in
LeRobot's environment + ``policy=remote``. This adapter is tested at the Agent
level inside a LeRobot 0.6.1 environment (tests/policies/test_lerobot_server.py).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from harness.interfaces import AgentRequest
from harness.params import parse
from harness.types import EpisodeSpec
from policies.plugin import LeRobotParams


class LeRobotPolicy:
    name = "lerobot"
    privileged = False
    action_kinds = frozenset({"continuous"})
    reads_images = True

    Params = LeRobotParams

    def __init__(self, **values: Any):
        self.params = params = parse(self.Params, values)
        try:
            from policies.lerobot_server import LeRobotChunker

            self.chunker = LeRobotChunker(params.policy, device=params.device, revision=params.revision)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.split(".")[0] == "lerobot":
                raise ValueError("policy=lerobot needs lerobot in this environment (lerobot 0.6.1: Python >= 3.12, "
                                 "torch < 2.12); otherwise serve it with `python -m policies.lerobot_server` in "
                                 "LeRobot's environment and use policy=remote") from None
            raise
        #: default: LeRobot's n_action_steps (what its select_action queue executes)
        self.replan_steps = params.replan_steps or self.chunker.n_action_steps

    def identity(self) -> dict[str, Any]:
        """Derived facts: the checkpoint's (its hash, or hub id and revision; its type) and the
        chunking in effect (the policy's n_action_steps unless replan_steps is given)."""
        return {**self.chunker.identity, "replan_steps": self.replan_steps}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests: Sequence[AgentRequest]) -> list[np.ndarray]:
        return self.chunker.chunks([r.observation for r in requests])
