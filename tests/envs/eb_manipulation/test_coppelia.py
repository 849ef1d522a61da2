"""The CoppeliaSim adapter's pure translation functions (the adapter itself needs CoppeliaSim,
which cannot be installed here, and no recorded payloads exist: it is not exercised)."""

from __future__ import annotations

import numpy as np
import pytest

from envs.eb_manipulation import coppelia as C
from harness.interfaces import AgentContractError, InvalidOutput


def _touch(root, subset, task, var, ep):
    d = root / subset / "eval" / task / f"variation{var}" / "episodes" / f"episode{ep}"
    d.mkdir(parents=True)
    (d / "configs.pkl").write_bytes(b"")


def test_official_episodes_follow_the_original_order(tmp_path):
    for task, var, ep in [("stack_cubes_color", 0, 1), ("pick_cube_shape", 10, 0), ("pick_cube_shape", 2, 3),
                          ("pick_cube_shape", 2, 0), ("wipe_table_direction", 1, 0), ("other_task", 0, 0)]:
        _touch(tmp_path, "base", task, var, ep)
    eps = C.official_episodes(tmp_path, "base")
    assert [e.episode_id for e in eps] == ["base/pick_cube_shape/v2e0", "base/pick_cube_shape/v2e3",
                                           "base/pick_cube_shape/v10e0", "base/stack_cubes_color/v0e1",
                                           "base/wipe_table_direction/v1e0"]
    assert [e.metadata["index"] for e in eps] == list(range(5))
    assert eps[3].metadata["task_class"] == "stack"
    with pytest.raises(FileNotFoundError):
        C.official_episodes(tmp_path, "spatial")


def test_translate_action():
    assert C.translate_action([1.0, 2, 3, 4, 5, 6, 1]) == [1, 2, 3, 4, 5, 6, 1]
    assert "7 numbers" in C.translate_action([1, 2])
    assert C.translate_action(InvalidOutput("x", "no JSON")) == "no JSON"
    with pytest.raises(AgentContractError):
        C.translate_action([1, 2, 3, 4, 5, 6, float("inf")])


def test_coordinates_from_points_sorts_by_y_bin():
    pts = {"a": np.array([0.2, 0.3, 0.77]), "b": np.array([0.0, -0.2, 0.77]), "c": np.array([0.1, 0.0, 0.8])}
    assert C.coordinates_from_points(pts) == {"object 1": [30, 30, 17], "object 2": [40, 50, 20],
                                              "object 3": [50, 80, 17]}


def test_translate_step():
    info = {"env_feedback": "fb", "task_success": 1.0, "action_success": 1.0}
    obs, r, term, trunc, out = C.translate_step((None, 1.0, True, info), steps=4, invalid=1, instruction="Do it.",
                                                task_class="pick", coords={"object 1": [1, 2, 3]}, image=None)
    assert (r, term, trunc) == (1.0, True, False)
    assert out["success"] and out["termination"] == "success" and out["invalid_actions"] == 1
    assert obs["object_coordinates_text"] == "{'object 1': [1, 2, 3]}" and obs["feedback"] == "fb"
    info = {"env_feedback": "fb", "task_success": 0.0, "action_success": 0.0}
    _, r, term, trunc, out = C.translate_step((None, -1, False, info), steps=15, invalid=2, instruction="",
                                              task_class="wipe", coords={}, image=None)
    assert (term, trunc, out["termination"], out["motion_ok"]) == (False, True, "max_steps", False)
    # the original's terminate flag without success (stack with a closed gripper is not terminal
    # there; any other terminate is the step limit)
    _, _, term, trunc, _ = C.translate_step((None, 0.0, True, info), steps=3, invalid=0, instruction="",
                                            task_class="stack", coords={}, image=None)
    assert not term and trunc
