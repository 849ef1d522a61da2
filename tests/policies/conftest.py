"""Shared pieces for the policy tests: a scripted policy (a pure function of the
observation, so every wire hop can be checked exactly) and LIBERO-shaped
observations."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pytest

from harness.interfaces import AgentRequest
from harness.types import EpisodeSpec

CHUNK = 6


def libero_obs(seed: int, instruction: str = "put the black bowl on the plate", size: int = 256) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    return {
        "agentview_image": rng.integers(0, 256, (size, size, 3), dtype=np.uint8),
        "wrist_image": rng.integers(0, 256, (size, size, 3), dtype=np.uint8),
        "state": rng.uniform(-0.5, 0.5, 8).astype(np.float32),
        "instruction": instruction,
    }


def request(obs: dict[str, Any], episode_id: str = "t0/0") -> AgentRequest:
    return AgentRequest(EpisodeSpec("libero", "libero_spatial", episode_id, 7, obs["instruction"]), obs, {}, ())


def expected_chunk(obs: dict[str, Any]) -> np.ndarray:
    """What :class:`ScriptedPolicy` answers: rows j = state[:6] * 0.5 + 0.01 j, the
    mean of each image in two columns, gripper +1 (close) when state[6] > 0."""
    s = np.asarray(obs["state"], np.float64)
    chunk = np.zeros((CHUNK, 7))
    for j in range(CHUNK):
        chunk[j, :6] = s[:6] * 0.5 + 0.01 * j
    chunk[:, 4] = np.asarray(obs["agentview_image"], np.float64).mean() / 255.0 - 0.5
    chunk[:, 5] = np.asarray(obs["wrist_image"], np.float64).mean() / 255.0 - 0.5
    chunk[:, 6] = 1.0 if s[6] > 0 else -1.0
    return chunk.astype(np.float32)


class ScriptedPolicy:
    """A deterministic policy (scripted, not a model): ``expected_chunk`` of each
    observation; an instruction containing "explode" raises."""

    name = "scripted"
    privileged = False
    replan_steps = None

    def __init__(self, tag: str = "v1"):
        self.tag = tag
        self.batches: list[int] = []

    def identity(self) -> dict[str, Any]:
        return {"policy": self.name, "tag": self.tag}

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests: Sequence[AgentRequest]) -> list[np.ndarray]:
        self.batches.append(len(requests))
        for r in requests:
            if "explode" in r.observation["instruction"]:
                raise ValueError("scripted failure: the instruction asked for it")
        return [expected_chunk(r.observation) for r in requests]


@pytest.fixture
def scripted() -> ScriptedPolicy:
    return ScriptedPolicy()
