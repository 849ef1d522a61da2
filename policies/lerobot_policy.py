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
from harness.types import EpisodeSpec


class LeRobotPolicy:
    name = "lerobot"
    privileged = False
    action_kinds = frozenset({"continuous"})
    reads_images = True

    def __init__(self, policy: str, device: str = "cpu", revision: str | None = None,
                 replan_steps: int | None = None):
        try:
            from policies.lerobot_server import LeRobotChunker

            self.chunker = LeRobotChunker(policy, device=device, revision=revision)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.split(".")[0] == "lerobot":
                raise ValueError("policy=lerobot needs lerobot in this environment (lerobot 0.6.1: Python >= 3.12, "
                                 "torch < 2.12); otherwise serve it with `python -m policies.lerobot_server` in "
                                 "LeRobot's environment and use policy=remote") from None
            raise
        #: default: LeRobot's n_action_steps (what its select_action queue executes)
        self.replan_steps = int(replan_steps) if replan_steps else self.chunker.n_action_steps

    def identity(self) -> dict[str, Any]:
        return {**self.chunker.identity, "replan_steps": self.replan_steps}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests: Sequence[AgentRequest]) -> list[np.ndarray]:
        return self.chunker.chunks([r.observation for r in requests])
