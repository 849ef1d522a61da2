"""The scripted "model" behind tests/policies/openvla_ref_server.py: pure functions of what the
server receives (no json_numpy here: the server patches the json module, the tests must not)."""

from __future__ import annotations

import numpy as np

CHUNK = 8
GRIPPERS = (0.0, 0.3, 0.5, 0.7, 1.0, 0.2, 0.9, 0.51)


def openvla_action(image: np.ndarray, instruction: str, unnorm_key: str) -> np.ndarray:
    m = float(image.mean()) / 255.0
    return np.array([m - 0.5, len(instruction) / 100.0, len(unnorm_key) / 100.0, 0.01, -0.02, 0.03,
                     GRIPPERS[len(instruction) % len(GRIPPERS)]], dtype=np.float64)


def oft_chunk(full: np.ndarray, wrists: list, state: np.ndarray, instruction: str) -> list:
    rows = []
    for j in range(CHUNK):
        rows.append(np.array([float(full.mean()) / 255.0 - 0.5, float(np.mean([w.mean() for w in wrists])) / 255.0 - 0.5,
                              float(state[0]), float(state[6]), 0.01 * j, len(instruction) / 100.0,
                              GRIPPERS[j]], dtype=np.float32))
    return rows
