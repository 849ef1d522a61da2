"""Writes the LIBERO frames tests/policies/openvla_goldens.py runs OpenVLA's own preprocessing on.

Real observations as the ``libero`` suite gives them to a policy under ``protocol=openvla``
(256 px, rotated 180 degrees) and the raw robosuite end-effector values of the same step, from
several tasks of the four suites, after 0 to 60 seeded random actions (so the frames differ in
scene, arm pose and lighting of what the camera sees). Run in the project's environment:

    MUJOCO_GL=egl python tests/policies/openvla_frames.py FRAMES.npz
"""

from __future__ import annotations

import sys

import numpy as np

#: (split, task, init state, random actions before the frame is taken)
FRAMES = (
    ("libero_spatial", 0, 0, 0),
    ("libero_object", 3, 1, 10),
    ("libero_goal", 5, 2, 25),
    ("libero_10", 2, 0, 40),
    ("libero_spatial", 7, 3, 60),
)


def main(out: str) -> None:
    from envs.libero.suite import LiberoSuite

    suite = LiberoSuite(protocol="openvla", max_steps=100)
    env = suite.make_env()
    rng = np.random.default_rng(0)
    result: dict[str, np.ndarray] = {}
    try:
        for i, (split, task, trial, steps) in enumerate(FRAMES):
            (spec,) = [e for e in suite.episodes(split) if e.metadata["task_index"] == task
                       and e.metadata["init_index"] == trial]
            obs, _ = env.reset(options={"episode": spec})
            for _ in range(steps):
                action = np.concatenate([rng.uniform(-0.5, 0.5, 6), [rng.choice([-1.0, 1.0])]])
                obs, *_ = env.step(action)
            result[f"agentview_{i}"] = obs["agentview_image"]
            result[f"wrist_{i}"] = obs["wrist_image"]
            result[f"state_{i}"] = obs["state"]
            for key in ("robot0_eef_pos", "robot0_eef_quat", "robot0_gripper_qpos"):
                result[f"{key}_{i}"] = np.asarray(obs["robosuite"][key])
    finally:
        env.close()
    np.savez_compressed(out, **result)
    print(f"{out}: {len(FRAMES)} frames")


if __name__ == "__main__":
    main(sys.argv[1])
