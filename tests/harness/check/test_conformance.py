"""The conformance checkers (harness.check.conformance) pass on every built-in suite and agent, and
each one catches the deliberate bug it exists for.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import random
import sys
from dataclasses import dataclass

import pytest

from harness.params import param, parse
from harness.run.calls import AgentCaller
from harness.run.runner import Runner
from harness.store import ResultStore
from harness.check.conformance import AGENT_CHECKS, SUITE_CHECKS, ConformanceError, check_agent, check_suite
from harness.types import RunSpec
from tests.conftest import REPO_ROOT

EB_ALFRED = {"render": False, "generated_per_split": 6}
ALFRED = {"render": False, "generated_per_split": 6}
EB_MANIPULATION = {"render": False}
LIBERO = {"tasks": [0], "trials": 2, "max_steps": 10}

def _need_mujoco() -> None:
    if importlib.util.find_spec("mujoco") is None:
        if os.environ.get("REQUIRE_EB_MANIPULATION") == "1":
            pytest.fail("EB-Manipulation needs mujoco (REQUIRE_EB_MANIPULATION=1)", pytrace=False)
        pytest.skip("EB-Manipulation needs the eb_manipulation extra (mujoco)")


def _example():
    """The example plugin's modules (from examples/plugin_suite when it is not installed), its
    suites and oracles registered as its entry points would register them: a test runs the same
    whether the plugin is installed or imported from the tree."""
    path = str(REPO_ROOT / "examples" / "plugin_suite")
    if importlib.util.find_spec("example_suite") is None and path not in sys.path:
        sys.path.insert(0, path)
    import example_suite.plugin as plugin
    import example_suite.suite as suite_module
    from harness.registry.catalog import PLANNERS, SUITES

    for suite, oracle in ((plugin.SUITE, plugin.ORACLE), (plugin.QA_SUITE, plugin.QA_ORACLE)):
        if suite.name not in SUITES:
            SUITES.add(suite)
            PLANNERS.add(oracle)
    return suite_module


# --- every built-in passes ------------------------------------------------------------------
@pytest.mark.parametrize("name, params", [("eb_alfred", EB_ALFRED), ("alfred", ALFRED)])
def test_household_suites_conform(name, params):
    report = check_suite(name, suite_params=params)
    assert report.passed == list(SUITE_CHECKS)


@pytest.mark.slow
@pytest.mark.ci
def test_eb_manipulation_conforms():
    _need_mujoco()
    check_suite("eb_manipulation", suite_params=EB_MANIPULATION, episodes=2)


@pytest.mark.slow
@pytest.mark.ci
def test_libero_conforms():
    from tests.envs.libero.conftest import require_libero

    require_libero()
    check_suite("libero", suite_params=LIBERO, episodes=2)


@pytest.mark.parametrize("agent, suite, params", [
    ("oracle", "eb_alfred", EB_ALFRED),
    ("oracle_json", "eb_alfred", EB_ALFRED),
    ("random", "eb_alfred", EB_ALFRED),
    ("oracle", "alfred", ALFRED),
    ("random", "alfred", ALFRED),
])
def test_household_agents_conform(agent, suite, params):
    report = check_agent(agent, suite, suite_params=params)
    assert report.passed == list(AGENT_CHECKS)


@pytest.mark.slow
@pytest.mark.parametrize("agent", [pytest.param("oracle", marks=pytest.mark.ci), "random"])
def test_eb_manipulation_agents_conform(agent):
    """~50 s (oracle, in CI) and ~95 s (random) on two busy cores."""
    _need_mujoco()
    check_agent(agent, "eb_manipulation", suite_params=EB_MANIPULATION, episodes=2)


@pytest.mark.slow
def test_zero_policy_conforms():
    """~4 min on two busy cores (a LIBERO env is built for every run): not in CI's subset;
    the LIBERO suite check (~3 min, in CI) drives the same env with the same zero policy."""
    from tests.envs.libero.conftest import require_libero

    require_libero()
    check_agent("zero", "libero", suite_params=LIBERO, episodes=2)


def test_a_check_name_is_checked():
    with pytest.raises(ValueError, match="unknown check 'speed'"):
        check_suite("eb_alfred", suite_params=EB_ALFRED, checks=["speed"])


# --- each check catches its bug ------------------------------------------------------------
def _pipelined_runner_skips_agent_reset(monkeypatch):
    """The mutation: the pipelined runner marks the reset done without calling agent.reset()."""
    original = AgentCaller.serve

    def serve_call(self, served):
        for _, live in served:
            live.needs_reset = False
        return original(self, served)

    monkeypatch.setattr(AgentCaller, "serve", serve_call)


def test_reset_check_catches_a_pipelined_runner_that_skips_agent_reset(monkeypatch):
    _pipelined_runner_skips_agent_reset(monkeypatch)
    # Without the reset check the bug passes: the random planner draws lazily per episode,
    # so its records are the same lockstep and pipelined, run after run.
    check_agent("random", "eb_alfred", suite_params=EB_ALFRED, checks=["determinism", "schedule"])
    with pytest.raises(ConformanceError, match=r"reset: pipelined: act\(\) saw episode seen/\d+ before its reset"):
        check_agent("random", "eb_alfred", suite_params=EB_ALFRED, checks=["reset"])


def test_reset_check_catches_a_runner_that_resets_twice(monkeypatch):
    original = AgentCaller.reset

    def twice(self, live):
        original(self, live)
        return original(self, live)

    monkeypatch.setattr(AgentCaller, "reset", twice)
    with pytest.raises(ConformanceError, match=r"reset: lockstep: episode seen/\d+ was reset 2 times in 1 attempts"):
        check_agent("random", "eb_alfred", suite_params=EB_ALFRED, checks=["reset"])


def test_reset_check_catches_a_retry_without_agent_reset(monkeypatch):
    """A retried attempt (an env fault) must reset the agent again."""
    original, seen = AgentCaller.reset, set()

    def once_per_episode(self, live):
        if live.spec.key in seen:
            return None
        seen.add(live.spec.key)
        return original(self, live)

    monkeypatch.setattr(AgentCaller, "reset", once_per_episode)
    with pytest.raises(ConformanceError, match="reset 1 times in 2 attempts"):
        check_agent("random", "eb_alfred", suite_params=EB_ALFRED, checks=["reset"])


class _GarbageModel:
    """An EB-Manipulation text planner whose model only answers garbage: every reply is the
    suite's seeded fallback (envs.eb_manipulation.prompt.reply_from_output with the
    episode key and the call index, as the vlm planner calls it)."""

    name = "garbage_model"
    privileged = False
    reads_images = False

    def __init__(self, **_):
        from envs.eb_manipulation import prompt

        self.P = prompt
        self.calls: dict = {}

    def identity(self):
        return {"name": self.name}

    def reset(self, episode):
        self.calls[episode.key] = 0

    def act(self, requests):
        out = []
        for r in requests:
            k = self.calls[r.episode.key]
            self.calls[r.episode.key] = k + 1
            out.append(self.P.reply_from_output("I cannot see the image.", episode_key=r.episode.key, call_index=k))
        return out


@pytest.mark.slow
@pytest.mark.ci
def test_draws_check_catches_repeated_eb_manipulation_fallback_draws(monkeypatch):
    _need_mujoco()
    from envs.eb_manipulation import prompt as eb_manipulation_prompt

    check_agent(_GarbageModel, "eb_manipulation", suite_params=EB_MANIPULATION, episodes=2, checks=["draws"])
    original = eb_manipulation_prompt.fallback_rng
    # The mutation: the fallback draw forgets the call index (every draw of an episode the same).
    monkeypatch.setattr(eb_manipulation_prompt, "fallback_rng", lambda seed, key, call: original(seed, key, 0))
    # Without the draws check the bug passes: it is deterministic and the same on every schedule.
    check_agent(_GarbageModel, "eb_manipulation", suite_params=EB_MANIPULATION, episodes=2,
                checks=["determinism", "schedule"])
    with pytest.raises(ConformanceError, match=r"draws: all \d+ fallback actions of episode .* are the same draw"):
        check_agent(_GarbageModel, "eb_manipulation", suite_params=EB_MANIPULATION, episodes=2, checks=["draws"])


def test_draws_check_catches_random_draws_seeded_alike_in_every_episode(monkeypatch):
    """The mutation: the random planner seeds every episode's draws with the same key."""
    import planners.random_planner as rp

    monkeypatch.setattr(rp.RandomPlanner, "_rng_for", lambda self, episode: random.Random(f"x|{self.seed}"))
    check_agent("random", "eb_alfred", suite_params=EB_ALFRED, checks=["determinism", "schedule"])
    with pytest.raises(ConformanceError, match="every episode's first random action is the same draw"):
        check_agent("random", "eb_alfred", suite_params=EB_ALFRED, checks=["draws"])


def _leaky_suite():
    """The example suite with ``generator_seed`` (which changes every episode) declared
    results=False: left out of the run identity."""
    S = _example()
    from example_suite.plugin import ExampleParams

    fields = []
    for f in dataclasses.fields(ExampleParams):
        rule = f.metadata["param"]
        if f.name == "generator_seed":
            rule = dataclasses.replace(rule, results=False)
        fields.append((f.name, f.type, dataclasses.field(default=f.default, metadata={"param": rule})))
    LeakyParams = dataclasses.make_dataclass("LeakyParams", fields)

    class LeakySuite(S.ExampleSuite):
        name = "leaky_example"
        Params = LeakyParams

        def __init__(self, **values):
            self.params = parse(LeakyParams, values)

    return LeakySuite


def test_identity_check_catches_a_result_changing_field_left_out_of_the_identity(tmp_path):
    LeakySuite = _leaky_suite()
    # The harm without the check: a run with another generator_seed resumes the first one.
    with ResultStore(tmp_path / "store") as store:
        for seed in (0, 1):
            suite = LeakySuite(generator_seed=seed)
            spec = RunSpec(suite=suite.name, split="test", agent="oracle", variant="v", limit=2)
            from example_suite.agents import ExampleOracle

            summary = Runner(spec, suite, ExampleOracle(), store).run()
        assert summary.skipped == 2  # the second seed's episodes were never run
    # The other checks pass it ...
    check_suite(LeakySuite(), checks=["contract", "determinism", "schedule"],
                agent=lambda **v: __import__("example_suite.agents").agents.ExampleOracle(**v))
    # ... the identity check does not.
    with pytest.raises(ConformanceError, match=r"identity: suite parameter generator_seed 0 -> 1 is declared "
                                               r"results=False .* but changes the records"):
        check_suite(LeakySuite(), checks=["identity"],
                    agent=lambda **v: __import__("example_suite.agents").agents.ExampleOracle(**v))


def test_identity_check_catches_a_results_field_missing_from_the_identity(monkeypatch):
    """The mutation: the suite hashes no declared parameter (identity_of sees none)."""
    LeakySuite = _leaky_suite()
    import harness.run.identity as identity_module

    monkeypatch.setattr(identity_module, "identity_of", lambda params: {})
    with pytest.raises(ConformanceError, match=r"identity: suite parameter size 21 -> 22 is declared results=True "
                                               r"but leaves the run id unchanged"):
        check_suite(LeakySuite(), checks=["identity"],
                    agent=lambda **v: __import__("example_suite.agents").agents.ExampleOracle(**v))


def test_determinism_check_catches_an_unseeded_env(monkeypatch):
    S = _example()
    original = S.NumberLineEnv._observation
    unseeded = random.Random()

    def observation(self):  # the mutation: an unseeded draw in the observation
        obs = original(self)
        obs["text"] += f" Wind {unseeded.randint(0, 9)}."
        return obs

    monkeypatch.setattr(S.NumberLineEnv, "_observation", observation)
    agent = lambda **v: __import__("example_suite.agents").agents.ExampleOracle(**v)  # noqa: E731
    check_suite(S.ExampleSuite(), split="test", agent=agent, checks=["contract"])  # the contract alone passes it
    with pytest.raises(ConformanceError, match=r"determinism: episode test/000 seed 0 twice on a fresh env: "
                                               r"(reset|step \d+) differs at \[2\]\['text'\]|"
                                               r"determinism: .* differs at \[1\]\['text'\]"):
        check_suite(S.ExampleSuite(), split="test", agent=agent, checks=["determinism"])


def test_contract_check_catches_a_missing_info_key(monkeypatch):
    S = _example()
    original = S.NumberLineEnv._info

    def info(self, **kw):  # the mutation: the env forgets to report action_ok
        out = original(self, **kw)
        out.pop("action_ok")
        return out

    monkeypatch.setattr(S.NumberLineEnv, "_info", info)
    agent = lambda **v: __import__("example_suite.agents").agents.ExampleOracle(**v)  # noqa: E731
    with pytest.raises(ConformanceError, match=r"contract: step\(\) info lacks 'action_ok'"):
        check_suite(S.ExampleSuite(), split="test", agent=agent, checks=["contract"])


def test_schedule_check_catches_records_that_depend_on_the_batch(monkeypatch):
    """The mutation: an agent whose plan depends on how many requests share its call."""
    from tests.helpers import require_example_plugin

    require_example_plugin()  # registered: its declared default split (test)
    S = _example()
    from example_suite.agents import ExampleOracle

    @dataclass
    class BatchParams:
        max_plan_length: int = param(100, ge=1, help="longest plan")

    class BatchSensitive(ExampleOracle):
        Params = BatchParams

        def act(self, requests):
            plans = super().act(requests)
            return [p[:1] if len(requests) > 1 else p for p in plans]

    with pytest.raises(ConformanceError, match=r"schedule: pipelined vs lockstep \(local executor\): "
                                               r"episode test/\d+ differs in agent_calls"):
        check_agent(BatchSensitive, S.ExampleSuite(), checks=["schedule"])


# --- the probe: bugs only an agent that sends bad or aimless actions finds ---------------------
def _oracle_factory():
    return lambda **v: __import__("example_suite.agents").agents.ExampleOracle(**v)  # noqa: E731


def test_probe_catches_an_episode_that_never_reaches_its_step_limit(monkeypatch):
    S = _example()
    original = S.NumberLineEnv.step

    def step(self, action):  # the mutation: the step limit never cuts the episode off
        obs, reward, terminated, truncated, info = original(self, action)
        if info["termination"] == "max_steps":
            info["termination"], truncated, self.ended = None, False, False
        return obs, reward, terminated, truncated, info

    monkeypatch.setattr(S.NumberLineEnv, "step", step)
    # The oracle always reaches its target first: the other checks pass the bug.
    check_suite(S.ExampleSuite(), split="test", agent=_oracle_factory(), checks=["contract", "determinism"])
    with pytest.raises(ConformanceError, match=r"probe: episode test/\d+ did not end within 45 steps .* driven by "
                                               r"one valid action over and over"):
        check_suite(S.ExampleSuite(), split="test", agent=_oracle_factory(), checks=["probe"])


def test_probe_catches_state_leaking_between_episodes(monkeypatch):
    S = _example()
    original = S.NumberLineEnv.reset

    def reset(self, *, seed=None, options=None):  # the mutation: the invalid count survives a reset
        kept = getattr(self, "invalid", 0)
        out = original(self, seed=seed, options=options)
        self.invalid = kept
        out[1]["invalid_actions"] = kept
        return out

    monkeypatch.setattr(S.NumberLineEnv, "reset", reset)
    # The oracle makes no invalid action: the other checks pass the bug.
    check_suite(S.ExampleSuite(), split="test", agent=_oracle_factory(), checks=["contract", "determinism"])
    with pytest.raises(ConformanceError, match=r"probe: episode test/000 driven by the probe .* on the same env "
                                               r"after other episodes: .*state leaks between episodes"):
        check_suite(S.ExampleSuite(), split="test", agent=_oracle_factory(), checks=["probe"])


def test_probe_catches_an_unknown_action_accepted_as_valid(monkeypatch):
    S = _example()
    original = S.NumberLineEnv.step

    def step(self, action):  # the mutation: any string is taken as a move to the right
        if isinstance(action, str) and action.strip() not in S.ACTIONS:
            action = "right"
        return original(self, action)

    monkeypatch.setattr(S.NumberLineEnv, "step", step)
    check_suite(S.ExampleSuite(), split="test", agent=_oracle_factory(), checks=["contract", "determinism"])
    with pytest.raises(ConformanceError, match=r"probe: episode test/000: the unknown action 'probe: no such action "
                                               r"\w+' was accepted as valid"):
        check_suite(S.ExampleSuite(), split="test", agent=_oracle_factory(), checks=["probe"])


def test_probe_passes_the_unchanged_example_suite():
    S = _example()
    report = check_suite(S.ExampleSuite(), split="test", agent=_oracle_factory(), checks=["probe"])
    assert report.passed == ["probe"]


def test_suite_and_agent_checks_name_their_settings_alike():
    import inspect

    for fn in (check_suite, check_agent):
        names = inspect.signature(fn).parameters
        assert "suite_params" in names and "agent_params" in names, fn.__name__
    with pytest.warns(DeprecationWarning, match="suite_params"):
        check_suite("eb_alfred", params=EB_ALFRED, checks=["contract"], episodes=1)
    with pytest.raises(TypeError, match="suite_params= only"):
        check_suite("eb_alfred", params=EB_ALFRED, suite_params=EB_ALFRED, checks=["contract"])
