"""The original's grasp rule: on a close command every graspable object the gripper's proximity
sensor detects is attached to the gripper, on an open command everything is released
(EmbodiedBench b247936 ``envs/eb_manipulation/amsolver/task_environment.py:398-412``; PyRep's
``Gripper.grasp`` / ``release``). The twin attaches with a MuJoCo weld; the rest is physics."""

from __future__ import annotations

import numpy as np
import pytest

from envs.eb_manipulation import episodes as E
from envs.eb_manipulation.agents import oracle_plan
from envs.eb_manipulation.env import EBManipulationEnv
from harness.types import INFO_PRIVILEGED

pytestmark = pytest.mark.ci


def _start(family="pick_cube_shape", index=0):
    spec = next(e for e in E.episodes("base") if e.metadata["family"] == family and e.metadata["index"] == index)
    env = EBManipulationEnv(render=False)
    _, info = env.reset(options={"episode": spec, "privileged": True})
    t = spec.metadata["scene"]["target"]
    return env, info, t.get("object") or t.get("top")


def test_object_in_the_sensor_is_carried_even_if_the_fingers_miss_it():
    """Grasping 2 bins (2 cm) above the oracle's grasp: the fingers close over the object's top,
    the sensor still holds it, so it is attached and lifted (the twin's friction grasp dropped it)."""
    env, info, name = _start()
    above, grasp, lift = oracle_plan(info[INFO_PRIVILEGED])
    z0 = env.world.body_pos(name)[2]
    env.step(above)
    env.step([*grasp[:2], grasp[2] + 2, *grasp[3:]])
    assert env.world.attached == [name]
    env.step(lift)
    assert env.world.body_pos(name)[2] > z0 + 0.05  # carried up with the hand
    env.step([*lift[:6], 1])  # open: released, it falls back to the table
    assert env.world.attached == [] and env.world.body_pos(name)[2] < z0 + 0.01
    env.close()


def test_nothing_in_the_sensor_nothing_attached():
    env, info, name = _start()
    above, grasp, lift = oracle_plan(info[INFO_PRIVILEGED])
    env.step(above)
    env.step([*above[:6], 0])  # closing 9 cm above the object
    assert env.world.attached == [] and env.world.sensed() == []
    env.step([grasp[0] + 12, *grasp[1:]])  # closing 12 cm beside it, at the table
    assert name not in env.world.attached
    env.close()


def test_rotated_gripper_still_attaches():
    """Yaw turned 45 degrees (15 bins): the fingers meet a cube-like object on its corners; the
    sensor rule still attaches it."""
    env, info, name = _start("stack_cubes_color", 0)
    above, grasp, lift = oracle_plan(info[INFO_PRIVILEGED])
    turn = lambda a: [*a[:5], (a[5] + 15) % 120, a[6]]  # noqa: E731
    z0 = env.world.body_pos(name)[2]
    for a in (above, grasp, lift):
        env.step(turn(a))
    assert env.world.attached == [name] and env.world.body_pos(name)[2] > z0 + 0.05
    env.close()
