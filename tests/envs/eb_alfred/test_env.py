"""Episode rules of the EB-ALFRED env."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from envs.eb_alfred.env import EBAlfredEnv
from envs.eb_alfred.generator import generate
from envs.eb_alfred.protocol import (
    FEEDBACK_INVALID_PREFIX, FEEDBACK_SUCCESS, MAX_INVALID_ACTIONS, MAX_STEPS,
)
from envs.eb_alfred.skills import FIND_OBJECTS
from envs.household import World
from harness.interfaces import EpisodeEnv
from harness.types import (
    INFO_ACTION_OK, INFO_EXPERT_LENGTH, INFO_FEEDBACK, INFO_GC_SATISFIED, INFO_GC_TOTAL, INFO_INVALID_ACTIONS,
    INFO_PRIVILEGED, INFO_SUCCESS, INFO_TASK_TYPE, INFO_TERMINATION, EpisodeSpec,
)


def test_protocol_constants() -> None:
    assert MAX_STEPS == 30 and MAX_INVALID_ACTIONS == 10  # EmbodiedBench EBAlfEnv.py
    assert FEEDBACK_SUCCESS == "Last action executed successfully."
    assert FEEDBACK_INVALID_PREFIX == "Last action is invalid. "


@pytest.fixture(scope="module")
def episode() -> EpisodeSpec:
    return generate("seen", 1, seed=0)[0]


def _reset(episode: EpisodeSpec, render: bool = False, privileged: bool = False):
    env = EBAlfredEnv(render_images=render)
    obs, info = env.reset(seed=episode.seed, options={"episode": episode, "privileged": privileged})
    return env, obs, info


def test_reset_observation_and_info(episode: EpisodeSpec) -> None:
    env, obs, info = _reset(episode, render=True, privileged=True)
    assert isinstance(env, EpisodeEnv)
    assert set(obs) == {"text", "image", "actions", "instruction"}
    assert obs["instruction"] == episode.instruction
    assert isinstance(obs["image"], np.ndarray) and obs["image"].dtype == np.uint8 and obs["image"].shape[2] == 3
    assert len(obs["actions"]) >= 162
    for key in (INFO_SUCCESS, INFO_GC_SATISFIED, INFO_GC_TOTAL, INFO_INVALID_ACTIONS, INFO_EXPERT_LENGTH,
                INFO_TASK_TYPE, INFO_ACTION_OK, INFO_FEEDBACK, INFO_TERMINATION):
        assert key in info
    assert info[INFO_SUCCESS] is False and info[INFO_GC_TOTAL] >= 1
    assert isinstance(info[INFO_EXPERT_LENGTH], int) and info[INFO_EXPERT_LENGTH] > 0
    assert info[INFO_TASK_TYPE] == episode.metadata["task_type"]
    world = info[INFO_PRIVILEGED]
    assert isinstance(world, World) and world is not env.world
    assert pickle.loads(pickle.dumps(world)) == world


def test_render_false_gives_no_image_and_no_privileged_by_default(episode: EpisodeSpec) -> None:
    _, obs, info = _reset(episode)
    assert obs["image"] is None and INFO_PRIVILEGED not in info


def test_reset_is_deterministic(episode: EpisodeSpec) -> None:
    _, obs1, info1 = _reset(episode, privileged=True)
    _, obs2, info2 = _reset(episode, privileged=True)
    assert obs1["text"] == obs2["text"] and obs1["actions"] == obs2["actions"]
    assert info1[INFO_PRIVILEGED] == info2[INFO_PRIVILEGED]


def _receptacle_finds(env: EBAlfredEnv, actions: list[str]) -> list[str]:
    """``find a X`` actions of the list for receptacle types present in the scene:
    they succeed by construction (``find`` teleports to any object not in hand)."""
    present = {o.type for o in env.world.objects.values() if o.receptacle and not env.world.is_held(o.id)}
    return [a for a in actions if a.startswith("find a ") and a[len("find a "):] in present]


def test_valid_step_by_string_and_by_id(episode: EpisodeSpec) -> None:
    """Mutation caught: success feedback other than EB-ALFRED's text, or an action id
    mapped to the wrong entry of the scene's list."""
    env, obs, _ = _reset(episode)
    finds = _receptacle_finds(env, obs["actions"])
    assert len(finds) >= 2
    _, _, _, _, info = env.step("drop the object in hand")  # nothing held: a failing skill
    assert info[INFO_ACTION_OK] is False and info[INFO_FEEDBACK].startswith(FEEDBACK_INVALID_PREFIX)
    assert info[INFO_INVALID_ACTIONS] == 1 and info["env_steps"] == 1
    target = obs["actions"].index(finds[0])
    _, _, _, _, info = env.step(target)
    assert info[INFO_ACTION_OK] is True and info[INFO_FEEDBACK] == FEEDBACK_SUCCESS
    assert info["env_steps"] == 2 and info["action"] == finds[0] and info[INFO_INVALID_ACTIONS] == 1
    faced = env.world.at
    assert faced is not None and env.world.objects[faced].type == finds[0][len("find a "):]
    _, _, _, _, info = env.step(f"  {finds[1]}.")  # by string; whitespace and a final '.' tolerated
    assert info[INFO_ACTION_OK] is True and info[INFO_FEEDBACK] == FEEDBACK_SUCCESS
    assert info["env_steps"] == 3 and info["action"] == finds[1] and info[INFO_INVALID_ACTIONS] == 1


@pytest.mark.parametrize("bad", ["", "fly to the moon", '{"executable_plan": [', 10**6, -1, None, 3.5, True])
def test_unparseable_actions_are_invalid_without_a_step(episode: EpisodeSpec, bad) -> None:
    env, _, _ = _reset(episode)
    _, reward, term, trunc, info = env.step(bad)
    assert info[INFO_ACTION_OK] is False and info[INFO_INVALID_ACTIONS] == 1
    assert info[INFO_FEEDBACK].startswith(FEEDBACK_INVALID_PREFIX)
    assert info["env_steps"] == 0 and reward == 0.0 and not term and not trunc


def test_object_not_in_scene_is_an_invalid_step(episode: EpisodeSpec) -> None:
    env, _, _ = _reset(episode)
    _, _, _, _, info = env.step("find a Spaceship")
    assert info[INFO_ACTION_OK] is False and "Cannot find Spaceship" in info[INFO_FEEDBACK]
    assert info["env_steps"] == 1


def test_ten_invalid_actions_end_the_episode(episode: EpisodeSpec) -> None:
    env, _, _ = _reset(episode)
    for i in range(1, MAX_INVALID_ACTIONS + 1):
        _, _, term, trunc, info = env.step("nonsense")
        assert term == (i == MAX_INVALID_ACTIONS) and not trunc
    assert info[INFO_TERMINATION] == "max_invalid"
    with pytest.raises(RuntimeError):
        env.step("nonsense")


def test_thirty_steps_truncate_the_episode(episode: EpisodeSpec) -> None:
    env, _, _ = _reset(episode)
    present = sorted({o.type for o in env.world.objects.values() if o.receptacle and o.type in FIND_OBJECTS})
    first, second = f"find a {present[0]}", f"find a {present[1]}"
    for i in range(1, MAX_STEPS + 1):
        _, _, term, trunc, info = env.step(first if i % 2 else second)
        assert info[INFO_ACTION_OK] and not term
        assert trunc == (i == MAX_STEPS)
    assert info[INFO_TERMINATION] == "max_steps" and info["env_steps"] == MAX_STEPS


def test_step_before_reset_raises() -> None:
    with pytest.raises(RuntimeError):
        EBAlfredEnv().step("find a Cabinet")


def test_reset_without_episode_raises() -> None:
    with pytest.raises(ValueError):
        EBAlfredEnv().reset(seed=0, options={})


def test_uninstantiable_episode_raises_with_reason() -> None:
    spec = EpisodeSpec("eb_alfred", "base", "base/99", 0, "Put a sofa in the fridge.", {
        "task_type": "pick_and_place_simple", "floor_plan": 1,
        "pddl_params": {"object_target": "Pillow", "parent_target": "Sofa"},
    })
    with pytest.raises(ValueError, match="Pillow|Sofa"):
        EBAlfredEnv().reset(seed=0, options={"episode": spec})
