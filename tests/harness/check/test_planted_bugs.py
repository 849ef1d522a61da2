"""Planted env bugs: each a one-line change to the example suite (examples/plugin_suite), applied
by monkeypatch, and check_suite refusing each one with a message naming the rule it breaks.

The unchanged suite passes the same checks (the last test), so each refusal is the bug's.
"""

from __future__ import annotations

import itertools
import random

import pytest

from harness.check.conformance import ConformanceError, check_suite
from harness.types import (
    INFO_EXPERT_LENGTH, INFO_GC_SATISFIED, INFO_GC_TOTAL, INFO_INVALID_ACTIONS, INFO_PRIVILEGED, INFO_SUCCESS,
    INFO_VALUES,
)
from tests.harness.check.test_conformance import _example, _oracle_factory

FAST = ["contract", "probe", "determinism"]


def _after(S, monkeypatch, method, change):
    """Wrap ``NumberLineEnv.<method>``: ``change(env, result, *args)`` edits (or replaces) its result."""
    original = getattr(S.NumberLineEnv, method)

    def patched(self, *args, **kw):
        out = original(self, *args, **kw)
        changed = change(self, out, *args)
        return out if changed is None else changed

    monkeypatch.setattr(S.NumberLineEnv, method, patched)


def _info(S, monkeypatch, edit):
    """Edit the info dict the env builds (``edit``'s return value is ignored)."""
    _after(S, monkeypatch, "_info", lambda env, info: edit(env, info) and None)


def _step_result(S, monkeypatch, edit):
    _after(S, monkeypatch, "step", lambda env, out, action: edit(env, list(out)))


def _leaky_reset(S, monkeypatch):
    def keep(env, out):
        env.invalid = out[1][INFO_INVALID_ACTIONS] = getattr(env, "_kept", 0)
    original = S.NumberLineEnv.step

    def step(self, action):
        out = original(self, action)
        self._kept = self.invalid
        return out
    monkeypatch.setattr(S.NumberLineEnv, "step", step)
    _after(S, monkeypatch, "reset", keep)


def _counted_twice(env, out):
    if not out[4]["action_ok"]:
        env.invalid += 1
        out[4][INFO_INVALID_ACTIONS] = env.invalid
    return tuple(out)


def _forgets_invalid(env, out):
    if out[4]["action_ok"]:
        env.invalid = out[4][INFO_INVALID_ACTIONS] = 0
    return tuple(out)


def _never_cut_off(env, out):
    if out[4]["termination"] == "max_steps":
        out[4]["termination"], out[3], env.ended = None, False, False
    return tuple(out)


def _not_counted(S, monkeypatch):
    original = S.NumberLineEnv.step

    def step(self, action):
        before = self.invalid
        out = original(self, action)
        self.invalid = out[4][INFO_INVALID_ACTIONS] = before
        return out
    monkeypatch.setattr(S.NumberLineEnv, "step", step)


def _any_string_moves(S, monkeypatch):
    original = S.NumberLineEnv.step
    monkeypatch.setattr(S.NumberLineEnv, "step", lambda self, a: original(
        self, "right" if isinstance(a, str) and a.strip() not in S.ACTIONS else a))


_RESETS = itertools.count()


def _unseeded_start(env, out):
    """The start from a count of resets (any env's), not from the episode and its seed."""
    env.position = [p for p in range(env.size) if p != env.target][next(_RESETS) % (env.size - 1)]
    return env._observation(), out[1]


def _shuffled_episodes(S, monkeypatch):
    original = S.ExampleSuite.episodes
    monkeypatch.setattr(S.ExampleSuite, "episodes",
                        lambda self, split: random.Random().sample(list(original(self, split)), 10))


def _undeclared_class(S, monkeypatch):
    import example_suite.failures as F

    monkeypatch.setattr(F.ExampleFailures, "classify", lambda self, episode: "lost")


def _stale_second_reset(S, monkeypatch):
    """A reset with the same seed as the env's last reset keeps the last episode's position (a
    cache keyed by the seed, say): every other reset, and every fresh env, is right."""
    original = S.NumberLineEnv.reset

    def reset(self, *, seed=None, options=None):
        last, kept = getattr(self, "_last_seed", None), getattr(self, "position", None)
        out = original(self, seed=seed, options=options)
        self._last_seed = seed
        if seed == last and kept is not None:
            self.position = kept
            return self._observation(), out[1]
        return out
    monkeypatch.setattr(S.NumberLineEnv, "reset", reset)


#: A ratio metric of the example suite's own, declared for the ratio bug and its control: moves
#: toward the target / moves, pooled; its env delivers both values in every info.
ON_COURSE = ("on_course", "toward", "moves")


def _with_a_ratio(S, monkeypatch, toward):
    """The example suite declaring :data:`ON_COURSE` beside its metrics; its env delivering
    ``toward(env)`` moves toward the target of ``env.steps`` moves."""
    import dataclasses

    import example_suite.plugin as plugin

    from harness.scoring import policy as scoring
    from harness.registry.catalog import SUITES

    name, value, weight = ON_COURSE
    ratio = scoring.Metric(name, "On course", value, aggregation="ratio", weight=weight)
    monkeypatch.setitem(SUITES._entries, ("example", None),  # noqa: SLF001
                        dataclasses.replace(plugin.SUITE, metrics=(*plugin.METRICS, ratio)))
    _info(S, monkeypatch, lambda env, i: i[INFO_VALUES].update({value: toward(env), weight: env.steps}))


def _toward(env):
    """The moves that brought the walker closer: at most its moves, each one toward a target it
    starts away from (the oracle's walk)."""
    return min(env.steps, abs(int(env._episode.metadata["target"]) - int(env._episode.metadata["start"])))


#: (name, apply(S, monkeypatch), the checks, what check_suite says)
BUGS = [
    ("observation outside the declared space",
     lambda S, mp: _after(S, mp, "_observation", lambda env, obs: obs.update(position=env.position)), FAST,
     r"contract: episode \S+ reset: the observation is outside the declared observation_space: observation: "
     r"key 'position'"),
    ("observation text past its declared length",
     lambda S, mp: _after(S, mp, "_observation", lambda env, obs: obs.update(text=obs["text"] * 20)), FAST,
     r"outside the declared observation_space: observation\['text'\]"),
    ("a step accepted after the episode ended",
     lambda S, mp: mp.setattr(S.NumberLineEnv, "ended", False, raising=False) or _after(
         S, mp, "step", lambda env, out, a: setattr(env, "ended", False)), FAST,
     r"a step after the episode ended was accepted and changed"),
    ("success reported on a non-final step",
     lambda S, mp: _info(S, mp, lambda env, i: i.update({INFO_SUCCESS: abs(env.target - env.position) <= 1})),
     FAST, r"success reported on a step that does not end the episode"),
    ("goal conditions met above the total",
     lambda S, mp: _info(S, mp, lambda env, i: i.update({INFO_GC_SATISFIED: 2 * i[INFO_GC_SATISFIED]})), FAST,
     r"gc_satisfied 2 outside 0 \.\. gc_total 1"),
    ("goal-condition total changing within an episode",
     lambda S, mp: _info(S, mp, lambda env, i: i.update({INFO_GC_TOTAL: 1 + env.steps})), FAST,
     r"gc_total changed within the episode"),
    ("a metric value outside its declared range",
     lambda S, mp: _info(S, mp, lambda env, i: i.update({INFO_VALUES: {"closeness": 2.0}})), FAST,
     r"suite example: metric 'closeness' value 2 is outside its declared range \[0, 1\]"),
    ("a declared metric the env never delivers",
     lambda S, mp: _info(S, mp, lambda env, i: i.pop(INFO_VALUES)), FAST,
     r"suite example: metric 'closeness' applies but the episode ended without its value 'closeness'"),
    ("a negative expert length",
     lambda S, mp: _info(S, mp, lambda env, i: i.update({INFO_EXPERT_LENGTH: -i[INFO_EXPERT_LENGTH]})), FAST,
     r"expert_length -\d+ is below 0"),
    ("an invalid action counted twice",
     lambda S, mp: _step_result(S, mp, _counted_twice), FAST,
     r"was counted 2 times \(invalid_actions 0 -> 2; one invalid action is counted once\)"),
    ("the invalid count cleared by a valid move",
     lambda S, mp: _step_result(S, mp, _forgets_invalid), FAST,
     r"invalid_actions went [1-9]\d* -> 0 on a step with action_ok=True"),
    ("an invalid action not counted",
     _not_counted, FAST, r"probe: episode \S+: the unknown action .* was not counted"),
    ("an unknown action taken as a move",
     _any_string_moves, FAST, r"probe: episode \S+: the unknown action .* was accepted as valid"),
    ("a reset that ignores the seed",
     lambda S, mp: _after(S, mp, "reset", _unseeded_start), FAST,
     r"on two fresh envs: reset differs at \[1\]\['text'\]; not deterministic"),
    ("state leaking between episodes", _leaky_reset, FAST, r"state leaks between episodes"),
    ("an episode never cut off at its step limit",
     lambda S, mp: _step_result(S, mp, _never_cut_off), FAST, r"did not end within 45 steps"),
    ("a documented info key missing",
     lambda S, mp: _info(S, mp, lambda env, i: i.pop("action_ok")), FAST, r"step\(\) info lacks 'action_ok'"),
    ("a reward that is not a finite number",
     lambda S, mp: _step_result(S, mp, lambda env, out: (*out[:1], float("nan"), *out[2:])), FAST,
     r"reward must be a finite number"),
    ("terminated given as a number",
     lambda S, mp: _step_result(S, mp, lambda env, out: (*out[:2], int(out[2]), *out[3:])), FAST,
     r"terminated must be a bool"),
    ("privileged state shown to every agent",
     lambda S, mp: _info(S, mp, lambda env, i: i.setdefault(INFO_PRIVILEGED, {"target": env.target})), FAST,
     r"holds 'privileged_state' although privileged=False"),
    ("episodes in another order at every call", _shuffled_episodes, FAST, r"is not in a fixed order"),
    ("a failure class the suite does not declare", _undeclared_class, ["probe"],
     r"is classed 'lost', a failure class the suite does not declare"),
    ("a metric value that is NaN",
     lambda S, mp: _info(S, mp, lambda env, i: i.update({INFO_VALUES: {"closeness": float("nan")}})), FAST,
     r"contract: reset\(\) info\['values'\]: suite example: metric 'closeness' value 'closeness' is nan, not a "
     r"number: not delivered"),
    ("a metric value that is not a number",
     lambda S, mp: _info(S, mp, lambda env, i: i.update({INFO_VALUES: {"closeness": "near"}})), FAST,
     r"info\['values'\] must map names to numbers or None"),
    ("a ratio metric's value over its declared range",
     lambda S, mp: _with_a_ratio(S, mp, lambda env: env.steps + 1), FAST,
     r"probe: episode \S+ driven by the probe .* ended in an env error record: what the suite declares is broken: "
     r"suite example: metric 'on_course' value 'toward' \d+ over weight 'moves' \d+ is outside its declared range "
     r"\[0, 1\]"),
    ("a second reset with the same seed that differs", _stale_second_reset, FAST,
     r"determinism: episode \S+ seed \d+ twice on the same env, reset again at once with the same seed: reset "
     r"differs at .*; not deterministic"),
]


@pytest.mark.parametrize("apply, checks, message", [b[1:] for b in BUGS], ids=[b[0] for b in BUGS])
def test_check_suite_refuses_a_planted_bug(monkeypatch, apply, checks, message):
    S = _example()
    apply(S, monkeypatch)
    with pytest.raises(ConformanceError, match=message):
        check_suite(S.ExampleSuite(), agent=_oracle_factory(), checks=checks)


def test_the_unchanged_example_suite_passes_the_same_checks():
    S = _example()
    assert check_suite(S.ExampleSuite(), agent=_oracle_factory(), checks=FAST).passed == FAST


def test_the_example_suite_with_a_ratio_metric_its_env_keeps_passes(monkeypatch):
    """The control of the ratio bug: the same declaration, its values in range."""
    S = _example()
    _with_a_ratio(S, monkeypatch, _toward)
    assert check_suite(S.ExampleSuite(), agent=_oracle_factory(), checks=FAST).passed == FAST


def test_a_record_check_is_not_blamed_on_invalid_actions(monkeypatch):
    """The probe names the rule broken: a value outside what the suite declares is not an env
    that raised on an invalid action."""
    S = _example()
    _with_a_ratio(S, monkeypatch, lambda env: env.steps + 1)
    with pytest.raises(ConformanceError) as broken:
        check_suite(S.ExampleSuite(), agent=_oracle_factory(), checks=["probe"])
    assert "what the suite declares is broken" in str(broken.value)
    assert "counted, not raised" not in str(broken.value)


def test_each_error_record_of_a_check_run_names_its_rule():
    from harness.check.checker import error_rule

    declared = {"error_kind": "env", "error_message": "suite quiz: metric 'acc' value 2 is outside its declared "
                                                      "range [0, 1]"}
    raised = {"error_kind": "env", "error_message": "Traceback (most recent call last):\n  ...\nRuntimeError: boom"}
    refused = {"error_kind": "agent", "error_message": "bad action: AgentContractError: no such action"}
    assert error_rule("quiz", declared) == ("ended in an env error record: what the suite declares is broken: "
                                            "suite quiz: metric 'acc' value 2 is outside its declared range [0, 1]")
    assert error_rule("quiz", raised) == ("ended in an env error: the env raised (an invalid or unusable action is "
                                          "counted, not raised): RuntimeError: boom")
    assert "the env refused an action with an error" in error_rule("quiz", refused)
    assert "what the suite declares" not in error_rule("other", declared)  # another suite's line: not ours
