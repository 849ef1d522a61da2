"""One contract every registered suite passes (like Gymnasium's check_env over all specs):
reset/step types, documented info keys, determinism under a seed, step limits honoured.
"""

from __future__ import annotations

import importlib
import json
import os

import pytest

from harness.registry.catalog import PLANNERS, POLICIES, SUITES
from harness.interfaces import AgentContractError, AgentRequest, EpisodeEnv, Suite
from harness.types import (
    INFO_ACTION_OK,
    INFO_GC_SATISFIED,
    INFO_GC_TOTAL,
    INFO_INVALID_ACTIONS,
    INFO_SUCCESS,
    EpisodeSpec,
)

#: How to build each suite without external data, a split that needs none,
#: and a baseline agent that acts through the public interface. A suite
#: registered without an entry here fails the first test. ``kind="policy"``:
#: the agent is a policy, and malformed actions must raise AgentContractError.
#: ``share_env``: one env serves every rollout (suites whose env takes seconds to build).
#: ``needs``: a module the suite's simulator needs (the case skips, saying so, without it,
#: or fails when the ``require_env`` variable is 1, as in CI).
CONTRACT = {
    "eb_alfred": dict(params={"render": True, "generated_per_split": 6}, split="seen", agent="random"),
    "alfred": dict(params={"render": True, "generated_per_split": 6}, split="unseen", agent="random"),
    "libero": dict(params={"max_steps": 4, "tasks": [0], "trials": 2}, split="libero_spatial", agent="zero",
                   kind="policy", share_env=True, needs="libero.libero", require_env="REQUIRE_LIBERO"),
    "eb_manipulation": dict(params={"render": False}, split="base", agent="random",
                            needs="robosuite", require_env="REQUIRE_EB_MANIPULATION"),
    # The video-QA suites read a question file and clips: ``data`` names the fixture of their
    # generated data folder (tests/video_qa_data.py), given as ``suite.params.data_dir``.
    "cfg_bench": dict(params={}, data="cfg_data", split="all", agent="random"),
    "procobject": dict(params={}, data="po_data", split="test", agent="oracle"),
}

_SHARED_ENVS: dict = {}


def test_every_registered_suite_has_a_contract_entry():
    """Every suite this project registers (pyproject.toml; other installed packages' suites,
    such as the example plugin, answer to harness.check.conformance.check_suite instead)."""
    from harness.plugins import own_entry_points

    builtin = set(own_entry_points()["embodied_transfer.suites"])
    assert builtin == set(CONTRACT) and builtin <= set(SUITES.names())


@pytest.fixture(params=sorted(CONTRACT), scope="module")
def case(request):
    entry = CONTRACT[request.param]
    if entry.get("needs"):
        try:
            importlib.import_module(entry["needs"])
        except ImportError:
            reason = f"{request.param}'s simulator ({entry['needs']}) is not installed"
            if os.environ.get(entry.get("require_env", "-")) == "1":
                pytest.fail(f"{reason} and {entry['require_env']}=1", pytrace=False)
            pytest.skip(reason)
    params = dict(entry["params"])
    if entry.get("data"):
        params["data_dir"] = str(request.getfixturevalue(entry["data"]))
    yield request.param, SUITES.build(request.param, **params), entry
    env = _SHARED_ENVS.pop(request.param, None)
    if env is not None:
        env.close()


def _make_env(suite, entry):
    if not entry.get("share_env"):
        return suite.make_env()
    if suite.name not in _SHARED_ENVS:
        _SHARED_ENVS[suite.name] = suite.make_env()
    return _SHARED_ENVS[suite.name]


def _close_env(env, entry):
    if not entry.get("share_env"):
        env.close()


def _json(obj) -> str:
    return json.dumps(obj, sort_keys=True)


def test_suite_protocol(case):
    name, suite, entry = case
    assert isinstance(suite, Suite)
    assert suite.name == name and isinstance(suite.version, str) and suite.version
    protocol = suite.protocol(entry["split"])
    _json(dict(protocol))  # JSON-serialisable: hashed into the run identity
    assert isinstance(protocol["max_steps"], int) and protocol["max_steps"] > 0
    assert entry["split"] in suite.splits()
    episodes = suite.episodes(entry["split"])
    assert episodes and all(isinstance(e, EpisodeSpec) and e.suite == name for e in episodes)
    assert len({e.key for e in episodes}) == len(episodes)
    assert [e.key for e in suite.episodes(entry["split"])] == [e.key for e in episodes]  # stable order
    for e in episodes:
        _json(dict(e.metadata))
    with pytest.raises(KeyError):
        suite.episodes("no-such-split")


#: Protocol keys that repeat a declared parameter's *resolved* value (a derived fact: the
#: step budget every protocol states; LIBERO's fixture seeding, from the preset when null).
RESOLVED = {"max_steps"}
RESOLVED_BY_SUITE = {"libero": {"fixture_rng"}}  # (cfg_bench, procobject: their frame rule under "frames")


def test_protocol_lists_derived_facts_only(case):
    """The run identity hashes the declared parameters (identity_of(suite.params)); protocol()
    must not echo them by hand, or the two drift."""
    from harness.params import fields_of

    name, suite, entry = case
    declared = {f.name for f in fields_of(type(suite.params))}
    echoed = set(suite.protocol(entry["split"])) & declared
    assert echoed <= RESOLVED | RESOLVED_BY_SUITE.get(name, set()), f"{name} protocol echoes {sorted(echoed)}"


def _check_info(info):
    assert isinstance(info[INFO_SUCCESS], bool)
    assert isinstance(info[INFO_GC_SATISFIED], int) and isinstance(info[INFO_GC_TOTAL], int)
    assert 0 <= info[INFO_GC_SATISFIED] <= info[INFO_GC_TOTAL] or info[INFO_GC_TOTAL] == 0
    assert isinstance(info[INFO_INVALID_ACTIONS], int)


def _rollout(suite, spec, entry):
    env = _make_env(suite, entry)
    assert isinstance(env, EpisodeEnv)
    registry = POLICIES if entry.get("kind") == "policy" else PLANNERS
    agent = registry.build(entry["agent"], suite=suite.name)  # the suite's own first (its random agent)
    obs, info = env.reset(seed=spec.seed, options={"episode": spec, "privileged": agent.privileged,
                                                    "render": bool(getattr(agent, "reads_images", True))})
    _check_info(info)
    agent.reset(spec)
    trace, history = [], []
    max_steps = suite.protocol(spec.split)["max_steps"]
    for _ in range(max_steps + 5):
        (plan,) = agent.act([AgentRequest(spec, obs, info, tuple(history))])
        assert plan, "baseline agent returned an empty plan"
        obs, reward, terminated, truncated, info = env.step(plan[0])
        assert isinstance(reward, float) and isinstance(terminated, bool) and isinstance(truncated, bool)
        _check_info(info)
        assert isinstance(info[INFO_ACTION_OK], bool)
        history.append((plan[0], info.get("feedback", "")))
        trace.append((plan[0], reward, terminated, truncated, _json({k: v for k, v in info.items()
                                                                      if k != "privileged_state"})))
        if terminated or truncated:
            break
    _close_env(env, entry)
    return trace


def test_reset_step_types_and_step_limit(case):
    _, suite, entry = case
    spec = suite.episodes(entry["split"])[0]
    trace = _rollout(suite, spec, entry)
    assert trace[-1][2] or trace[-1][3], "episode never ended"
    assert len(trace) <= suite.protocol(spec.split)["max_steps"]


def test_deterministic_under_seed(case):
    _, suite, entry = case
    for spec in suite.episodes(entry["split"])[:3]:
        assert _rollout(suite, spec, entry) == _rollout(suite, spec, entry)


def test_invalid_actions_are_feedback_not_exceptions(case):
    _, suite, entry = case
    spec = suite.episodes(entry["split"])[0]
    env = _make_env(suite, entry)
    env.reset(seed=spec.seed, options={"episode": spec, "render": False})
    if entry.get("kind") == "policy":  # a malformed action breaks the agent contract: raised, never stepped
        for bad in ("", "fly to the moon", 10**9, None, [float("nan")] * 7, [0.0] * 6):
            with pytest.raises(AgentContractError):
                env.step(bad)
        _close_env(env, entry)
        return
    for bad in ("", "fly to the moon", 10**9, None, "{'action_id': 3"):
        _, _, terminated, truncated, info = env.step(bad)
        assert info[INFO_ACTION_OK] is False and info["feedback"]
        if terminated or truncated:
            break
    assert info[INFO_INVALID_ACTIONS] >= 1
    _close_env(env, entry)
