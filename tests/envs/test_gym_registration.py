"""Every suite's env is a real ``gymnasium.Env``: registered ids, declared spaces, and
gymnasium's own ``check_env`` (gymnasium/utils/env_checker.py) passing with no warning.

The household suites are fast; LIBERO (~6 min on a loaded 2-core machine) is slow-only and
EB-Manipulation (~30 s) is the simulator check that CI runs.
"""

from __future__ import annotations

import importlib.util
import os
import warnings

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")
from gymnasium import spaces  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402

from envs.gym_registration import GYM_IDS, FreeText, Record, action_kind, register_envs  # noqa: E402
from envs.eb_alfred.env import IMAGE_SIZE  # noqa: E402


def _needs(module: str, require_env: str):
    if importlib.util.find_spec(module) is None:
        if os.environ.get(require_env) == "1":
            pytest.fail(f"{module} is not installed and {require_env}=1", pytrace=False)
        pytest.skip(f"{module} is not installed (its extra)")


def _check(env_id: str, **kwargs) -> gym.Env:
    """check_env on the made env; any warning gymnasium's checker logs fails the test."""
    env = gym.make(env_id, **kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    gym_warnings = [str(w.message) for w in caught if "WARN" in str(w.message)]
    assert gym_warnings == []
    return env


@pytest.mark.parametrize("env_id", ["embodied_transfer/EBAlfred-v0", "embodied_transfer/Alfred-v0"])
def test_household_suites_pass_gymnasiums_check_env(env_id, request):
    # Small episode lists keep this fast: EB-ALFRED's official base subset (50, from the data
    # folder), 20 generated ALFRED episodes instead of 500.
    if "EBAlfred" in env_id:
        kwargs = {"split": "base", "data_dir": str(request.getfixturevalue("data_dir"))}
    else:
        kwargs = {"split": "seen", "generated_per_split": 20}
    env = _check(env_id, **kwargs)
    assert isinstance(env.unwrapped, gym.Env)
    assert isinstance(env.action_space, spaces.Text) and action_kind(env.action_space) == "text"
    size = env.unwrapped.image_size  # EB-ALFRED renders at 500 px (EBAlfEnv), ALFRED at 224
    obs, info = env.reset(seed=3)
    assert obs in env.observation_space and obs["image"].shape == (size, size, 3)
    # A string of the declared action language steps the env; the episode comes from the split.
    obs2, reward, terminated, truncated, info2 = env.step(obs["actions"][0])
    assert info2["action_ok"] in (True, False) and obs2 in env.observation_space
    frame = env.render() if env.render_mode else env.unwrapped.render()
    assert frame.shape == (size, size, 3) and frame.dtype == np.uint8
    env.close()


def test_make_takes_split_suite_params_and_render_mode(data_dir):
    env = gym.make("embodied_transfer/EBAlfred-v0", split="base", data_dir=str(data_dir), render_mode="rgb_array")
    obs, _ = env.reset(seed=0)
    assert {e.split for e in env.unwrapped.gym_episodes} == {"base"} and len(env.unwrapped.gym_episodes) == 50
    assert obs["instruction"] in {e.instruction for e in env.unwrapped.gym_episodes}
    assert env.render().shape == (IMAGE_SIZE, IMAGE_SIZE, 3)
    # Same seed, same episode and start; another seed, another draw from np_random.
    again, _ = env.reset(seed=0)
    assert again["text"] == obs["text"]
    # gymnasium's "module:id" form imports the registering module itself.
    made = gym.make("envs.gym_registration:embodied_transfer/Alfred-v0", generated_per_split=3)
    assert made.spec.kwargs["suite"] == "alfred" and len(made.unwrapped.gym_episodes) == 3
    with pytest.raises(ValueError, match="render_mode"):
        gym.make("embodied_transfer/EBAlfred-v0", render_mode="human")


def test_runner_path_unchanged_episode_in_options():
    """The harness passes the episode; the gym default draw never overrides it."""
    from harness.registry.catalog import SUITES

    suite = SUITES.build("eb_alfred")
    spec = suite.episodes("seen")[7]
    env = suite.make_env()
    obs, info = env.reset(seed=spec.seed, options={"episode": spec})
    assert obs["instruction"] == spec.instruction
    with pytest.raises(ValueError, match="options="):
        env.reset(seed=0)  # not made by gymnasium.make: no split to draw from


def test_register_is_idempotent_and_every_suite_has_an_id():
    from harness.registry.catalog import SUITES

    register_envs()
    register_envs()
    suites = {s for s, _, _ in GYM_IDS.values()}
    assert suites == {"eb_alfred", "alfred", "libero", "eb_manipulation"} <= set(SUITES.names())
    for env_id in GYM_IDS:
        assert env_id in gym.registry


def test_record_space_membership():
    space = Record({"text": FreeText()}, optional={"image": spaces.Box(0, 255, (2, 2, 3), np.uint8)})
    assert {"text": "a", "image": None} in space
    assert {"text": "a", "image": np.zeros((2, 2, 3), np.uint8)} in space
    assert {"text": "a", "image": np.zeros((3, 3, 3), np.uint8)} not in space
    assert {"image": None} not in space  # a required key is missing
    assert {"text": "a", "other": 1} not in space  # an undeclared key
    assert {"text": 3} not in space


@pytest.mark.slow
@pytest.mark.ci
def test_eb_manipulation_passes_gymnasiums_check_env():
    _needs("robosuite", "REQUIRE_EB_MANIPULATION")
    env = _check("embodied_transfer/EBManipulation-v0")
    assert isinstance(env.action_space, spaces.MultiDiscrete) and action_kind(env.action_space) == "discrete"
    assert env.action_space.nvec.tolist() == [101, 101, 101, 121, 121, 121, 2]
    env.close()


@pytest.mark.slow
def test_libero_passes_gymnasiums_check_env():
    _needs("libero", "REQUIRE_LIBERO")
    env = _check("embodied_transfer/Libero-v0")
    assert isinstance(env.action_space, spaces.Box) and env.action_space.shape == (7,)
    assert action_kind(env.action_space) == "continuous"
    env.close()
