"""The ALFRED env on the household backend: limits, stop, failures, goal counting."""

from __future__ import annotations

from pathlib import Path

import pytest

from envs.alfred.agents import AlfredOraclePlanner
from envs.alfred.protocol import MAX_FAILS, MAX_STEPS
from envs.alfred.suite import AlfredSuite
from harness.interfaces import AgentRequest, InvalidOutput

KEYCHAIN = "pick_two_obj_and_place-KeyChain-None-Sofa-202/trial_T20190908_102840_789300/0"


@pytest.fixture(scope="module")
def suite() -> AlfredSuite:
    return AlfredSuite(render=False, generated_per_split=8)


def _reset(suite, split="unseen", i=0, privileged=False):
    env = suite.make_env()
    ep = suite.episodes(split)[i]
    obs, info = env.reset(seed=ep.seed, options={"episode": ep, "privileged": privileged})
    return env, ep, obs, info


def test_ten_api_failures_end_the_episode(suite) -> None:
    env, _, obs, info = _reset(suite)
    assert info["gc_total"] > 0 and info["invalid_actions"] == 0
    for i in range(MAX_FAILS):
        _, _, term, trunc, info = env.step("PickupObject NoSuchThing")
        assert info["action_ok"] is False and "in reach" in info["feedback"]
        assert term == (i == MAX_FAILS - 1) and not trunc
    assert info["termination"] == "max_fails" and info["invalid_actions"] == MAX_FAILS
    with pytest.raises(RuntimeError):
        env.step("Stop")


def test_unparseable_and_invalid_output_count_as_failures(suite) -> None:
    env, _, _, _ = _reset(suite)
    _, _, _, _, info = env.step("please pick the apple")
    assert not info["action_ok"] and info["invalid_actions"] == 1 and info["env_steps"] == 1
    _, _, _, _, info = env.step(InvalidOutput("{{", "no triplets"))
    assert info["invalid_actions"] == 2 and info["env_steps"] == 1  # no step taken


def test_step_limit_is_1000(suite) -> None:
    env, _, obs, _ = _reset(suite)
    goto = next(a for a in obs["actions"] if a.startswith("GotoLocation"))
    for i in range(MAX_STEPS):
        _, _, term, trunc, info = env.step(goto)
        assert info["action_ok"] and not term
        if trunc:
            break
    assert i == MAX_STEPS - 1 and info["termination"] == "max_steps"


def test_goal_does_not_end_the_episode_stop_does(suite) -> None:
    """As in ALFRED's eval: success is read when the agent stops, and can be undone before."""
    env, ep, obs, info = _reset(suite, privileged=True)
    oracle = AlfredOraclePlanner()
    (plan,) = oracle.act([AgentRequest(ep, obs, info)])
    for action in plan:
        obs, reward, term, trunc, info = env.step(action)
        assert info["action_ok"], (action, info["feedback"])
        assert not (term or trunc)
    assert info["success"] and info["gc_satisfied"] == info["gc_total"]
    assert oracle.act([AgentRequest(ep, obs, info)]) == [[]]  # the oracle stops
    _, reward, term, _, info = env.step("Stop")
    assert term and reward == 1.0 and info["termination"] == "stop" and info["success"]


def test_oracle_replans_after_a_disturbance(suite) -> None:
    env, ep, obs, info = _reset(suite, i=1, privileged=True)
    oracle = AlfredOraclePlanner()
    (plan,) = oracle.act([AgentRequest(ep, obs, info)])
    for action in plan[: len(plan) // 2]:
        obs, _, _, _, info = env.step(action)
    if env.world.holding is not None:
        obs, _, _, _, info = env.step(f"GotoLocation {next(iter(obs['objects']))}")
    for _ in range(4):
        (plan,) = oracle.act([AgentRequest(ep, obs, info)])
        if not plan:
            break
        for action in plan:
            obs, _, _, _, info = env.step(action)
            if not info["action_ok"]:
                break
    assert info["success"]


def test_test_split_episode_has_no_goal(tmp_path: Path, data_dir: Path) -> None:
    from tests.envs.alfred.test_episodes import _alfred_tree

    suite = AlfredSuite(alfred_data_dir=str(_alfred_tree(tmp_path, data_dir)), render=True, generated_per_split=0)
    ep = suite.episodes("tests_seen")[0]
    env = suite.make_env()
    obs, info = env.reset(seed=0, options={"episode": ep, "privileged": True})
    assert info["gc_total"] == 0 and info["success"] is False and info["task_type"] is None
    assert obs["image"] is not None and obs["image"].shape == (224, 224, 3)
    assert AlfredOraclePlanner().act([AgentRequest(ep, obs, info)]) == [[]]


def test_restored_scene_on_reset(data_dir: Path) -> None:
    suite = AlfredSuite(eb_data_dir=str(data_dir), render=False, generated_per_split=0)
    ep = next(e for e in suite.episodes("eb_valid_seen") if e.episode_id == KEYCHAIN)
    env = suite.make_env()
    obs, info = env.reset(seed=ep.seed, options={"episode": ep})
    assert len(env.world.of_type("KeyChain")) == 4
    assert env.world.objects[env.world.at].thor_id == "Sofa|-01.16|+00.00|+00.45"
    assert info["expert_length"] == 8 and info["gc_total"] == 2
    assert "KeyChain" in obs["objects"] and "PickupObject KeyChain" in obs["actions"]


def test_default_alfred_image_is_a_frame_without_text(monkeypatch) -> None:
    """ALFRED's household image (image=frame) shares EB-ALFRED's frame renderer: no text layer."""
    import numpy as np
    from PIL import ImageDraw

    from envs.alfred.suite import AlfredSuite

    suite = AlfredSuite(generated_per_split=1)
    env = suite.make_env()
    obs, _ = env.reset(options={"episode": suite.episodes("seen")[0]})
    with monkeypatch.context() as m:
        m.setattr(ImageDraw.ImageDraw, "text", lambda self, *a, **k: None)
        bare = env.render()
    assert np.array_equal(obs["image"], bare)
    annotated = type(env)(image="annotated")
    obs2, _ = annotated.reset(options={"episode": suite.episodes("seen")[0]})
    assert not np.array_equal(obs2["image"], obs["image"])


def test_alfred_keeps_its_knife_check_for_slicing(suite) -> None:
    """ALFRED's eval path refuses SliceObject without a knife in hand (askforalfred/alfred
    env/thor_env.py:449-453, ``to_thor_api_exec`` raises, ``va_interact`` reports a failed
    action), although AI2-THOR's own SliceObject needs none: one API failure, nothing sliced."""
    env = suite.make_env()
    for ep in suite.episodes("unseen"):  # the first episode whose target can be sliced
        env.reset(seed=ep.seed, options={"episode": ep})
        target = ep.metadata["pddl_params"]["object_target"]
        world = env.world
        if any(o.type == target and o.sliceable for o in world.objects.values()):
            break
    else:
        pytest.fail("no generated episode with a sliceable target")
    assert world.holding is None
    _, _, _, _, info = env.step(f"GotoLocation {target}")
    assert info["action_ok"]
    _, _, _, _, info = env.step(f"SliceObject {target}")
    assert not info["action_ok"] and "Knife" in info["feedback"] and info["invalid_actions"] == 1
    assert not any(o.is_sliced for o in world.objects.values())
