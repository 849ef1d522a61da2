"""Which gripper poses the twin reaches, against EmbodiedBench (paper-release commit
b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04): its tool frame convention and its own example plans
(``embodiedbench/evaluator/config/eb_manipulation_example.py``, read from a checkout named by
``EMBODIEDBENCH_DIR`` by the reader ``prompt_source=embodiedbench`` puts into the prompt)."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np
import pytest

from envs.eb_manipulation import episodes as E
from envs.eb_manipulation import grammar as G
from envs.eb_manipulation import sim as S
from envs.eb_manipulation.env import INFO_MOTION_OK, EBManipulationEnv
from envs.eb_manipulation.prompt_embodiedbench import EXAMPLES, read_examples

pytestmark = pytest.mark.ci



def _env(family: str = "pick_cube_shape"):
    env = EBManipulationEnv(render=False)
    spec = next(e for e in E.episodes("base") if e.metadata["family"] == family)
    env.reset(options={"episode": spec})
    return env


def test_tip_frame_closes_the_fingers_along_its_y_axis():
    """The action's rotation names the original's tip frame, whose fingers close along its y axis
    (PyRep's Panda tip; see sim.TIP_TO_SITE): a top-down action with yaw bin 60 (0 degrees) puts the
    twin's finger axis along world y, and ``top_down_rotation`` inverts that."""
    env = _env()
    obs, _, _, _, info = env.step([50, 50, 30, 0, 60, 60, 1])
    assert info[INFO_MOTION_OK]
    _, rot = env.world.ee_pose()
    finger_axis = rot[:, 0]  # the grip site's x axis: the direction the fingers close along
    assert abs(finger_axis[1]) > 0.99
    for yaw in (0.0, 0.7, -1.2):
        site = S.top_down_rotation(yaw) @ S.TIP_TO_SITE
        assert math.isclose(math.atan2(site[1, 0], site[0, 0]), yaw, abs_tol=1e-9)
        assert site[2, 2] < -0.999  # pointing down
    env.close()


def test_every_top_down_yaw_is_reachable_at_the_table_centre():
    """Top-down (roll bin 0, pitch bin 60) at the table's centre, each move started from the ready
    posture: the bands a two-start IK could not reach (yaw bins 31-48 before the tip frame,
    61-78 after it) and every tenth bin move without a motion failure."""
    import mujoco

    world = S.PandaTable(E.episodes("base")[0].metadata["scene"])
    bins = sorted(set(range(28, 50)) | set(range(58, 82)) | set(range(0, 120, 10)))
    failed = []
    for yaw in bins:
        world.data.qpos[world.arm_qpos] = S.HOME_Q
        world.data.qvel[world.arm_dofs] = 0.0
        world.q_ref = S.HOME_Q.copy()
        mujoco.mj_forward(world.model, world.data)
        pose = G.action_to_pose([50, 50, 30, 0, 60, yaw, 1])
        res = world.move_to(pose.position, pose.rotation @ S.TIP_TO_SITE)
        if not res.ok:
            failed.append((yaw, res.reason))
    assert failed == []


def _checkout() -> Path:
    root = os.environ.get("EMBODIEDBENCH_DIR")
    if not root or not (Path(root) / EXAMPLES).is_file():
        pytest.skip("EMBODIEDBENCH_DIR does not point at an EmbodiedBench checkout")
    return Path(root)


def example_plans(path: Path) -> list[tuple[str, list[list[int]]]]:
    """(task class, actions) of every example plan of the original's main-setting examples (the
    lists ``prompt_source=embodiedbench`` takes its shots from, all of them); a plan string the
    original wrote with a stray bracket is read action by action."""
    plans = []
    for cls, examples in read_examples(path).items():
        for text in examples:
            plan = re.search(r'"executable_plan": "(.*)"', text).group(1)
            acts = [[int(v) for v in a.split(",")] for a in re.findall(r"\[(\d+(?:, *\d+){6})\]", plan)]
            plans.append((cls, acts))
    return plans


def test_embodiedbench_example_plans_execute_without_motion_failures():
    """Every action of every example plan EmbodiedBench ships (pick 2, stack 4, place 4, wipe 8)
    is reached by the twin: no "outside the workspace", no "no inverse-kinematics solution"."""
    plans = example_plans(_checkout() / EXAMPLES)
    assert len(plans) == 18
    family = {"pick": "pick_cube_shape", "stack": "stack_cubes_color", "place": "place_into_shape_sorter_color",
              "wipe": "wipe_table_direction"}
    failed = []
    for cls, acts in plans:
        env = _env(family[cls])
        for a in acts:
            _, _, term, trunc, info = env.step(a)
            if not info[INFO_MOTION_OK]:
                failed.append((cls, a, info["feedback"]))
            if term or trunc:
                break
        env.close()
    assert failed == []


def test_embodiedbench_example_poses_have_ik_solutions():
    """The quick form of the test above: each distinct pose of the original's example plans has an
    IK solution from the twin's IK starts (no motion simulated)."""
    plans = example_plans(_checkout() / EXAMPLES)
    world = S.PandaTable(E.episodes("base")[0].metadata["scene"])
    q0 = world.data.qpos[world.arm_qpos].copy()
    missing = []
    for a in sorted({tuple(a) for _, acts in plans for a in acts}):
        pose = G.action_to_pose(list(a))
        rot = pose.rotation @ S.TIP_TO_SITE
        ok = world.in_workspace(pose.position) and any(
            (lambda r: r[1] < S.IK_POS_TOL and r[2] < S.IK_ROT_TOL)(world.ik(pose.position, rot, seed))
            for seed in (q0, S.HOME_Q, *S.IK_WRIST_SEEDS))
        if not ok:
            missing.append(a)
    assert missing == []
    assert np.all(np.isfinite(q0))
