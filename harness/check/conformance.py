"""Conformance checkers for suites and agents, shipped with the harness (Gymnasium's
``check_env`` for this harness's contracts).

::

    from harness.check.conformance import check_suite, check_agent

    check_suite("example")                        # a registered suite, its own agent driving it
    check_agent("random", "eb_alfred", suite_params={"render": False})

Both name their settings the same way: ``suite_params=`` (the suite's) and ``agent_params=``
(the agent's).

Each check runs a few real episodes through the real runner (:class:`harness.run.runner.Runner`)
into a real SQLite store in a temporary folder, and raises :class:`ConformanceError` (an
AssertionError) whose message is one line naming the rule broken. What is checked:

``contract``
    the env's Gymnasium API (``reset -> (obs, info)``, ``step -> (obs, reward, terminated,
    truncated, info)``), observations in the declared ``observation_space`` and actions the env
    took as valid in its ``action_space`` (:mod:`harness.spaces`, as Gymnasium's ``check_env``),
    the episode invariants (:mod:`harness.check.invariants`: goal conditions within their
    constant total, expert length >= 0, success only on the terminal step, one invalid action
    counted once, a step after the end refused or changing nothing), the documented ``info``
    keys (:mod:`harness.types` ``INFO_*``) with
    their types, ``action_ok`` after every step, an episode that ends within the protocol's
    ``max_steps`` (plus its invalid-action allowance), ``episodes(split)`` in a fixed order
    with unique keys, ``protocol(split)`` JSON-serialisable with ``max_steps``; the agent's
    ``act`` answering one plan per request.
``probe`` (suites)
    a probe agent drives the env with what agents really send: invalid strings, unusable
    output (:class:`~harness.interfaces.InvalidOutput`), no-ops (a zero action; for text
    suites, one valid action over and over) and random valid actions (those the driving
    agent's steps were judged valid). Checked: an unknown action is refused (text:
    ``action_ok=False`` and one more invalid action counted; numeric: NaN or a wrong shape
    raises :class:`~harness.interfaces.AgentContractError` or is counted with
    ``action_ok=False``), every episode ends within
    ``max_steps`` (plus its invalid-action allowance) whatever the agent sends, an episode
    replays the same on two fresh envs (determinism) and on an env that ran other episodes
    first (no state leaks between episodes), the invariants hold and no privileged state
    reaches an agent that did not ask, and the probe's episodes through the runner end without
    an error record (the runner's checks of what the suite declares included,
    :mod:`harness.run.record_checks`), each in a failure class the suite declares
    (``SuitePlugin.failure_classes``). A free-text answer suite (``action_space`` an
    :class:`harness.spaces.AnswerText`) need not refuse an unknown text; an empty or unusable
    answer must be refused or scored as such.
``determinism``
    the same episode twice (a fresh env, the same env reset again at once with the same seed
    as Gymnasium's ``check_reset_seed_determinism`` does, and the same env after another
    episode) gives the same observations, rewards and infos (else "not deterministic", or
    "state leaks between episodes"); two runs give the same records and transcripts.
``schedule``
    records and transcripts identical lockstep (``RunSpec(pipeline=False)``) and pipelined,
    on the ``local`` and the ``process`` executor (:class:`harness.run.executors.SuiteEnvFactory`).
``reset`` (agents)
    exactly one ``agent.reset()`` per attempt, lockstep and pipelined, with one attempt
    made to fail (an injected env fault) so a retry is seen: a probe agent wrapping the real
    one fails when ``act`` sees an episode not reset, or an episode is reset more often than
    it was attempted.
``draws`` (agents)
    fallback actions (an :class:`~harness.interfaces.AgentReply` with ``output_error`` *and*
    actions) and, for random agents, every action, are drawn per episode and call: all draws
    of an episode equal, or every episode drawing the same, is a bug.
``identity``
    each declared parameter (:func:`harness.params.fields_of`) varied to another valid value
    inside its declared range (a bool flipped, another choice, a number +1 or -1 within its
    bounds, the field's ``example=``; others are skipped) changes the run id (:func:`harness.run.runner.run_id_of`) exactly when
    it is declared ``results=True``; a ``results=False`` field must also leave the records
    of a few episodes unchanged (a field that changes records is in the identity; where it
    sizes the split, the episodes both runs hold).

A script calling these puts its work under ``if __name__ == "__main__":``: the ``process``
executor's workers import the main script, and a worker that finds itself re-running one
stops and is named (:func:`harness.run.executors.refuse_in_worker_start`).

The checks are cheap (``episodes=`` episodes of ``split=``, the suite's default split when
not given); third-party plugins call them from their own tests.

This module is the checker's entry: the checks themselves are in
:mod:`harness.check.shared_checks` (contract, determinism, schedule, identity),
:mod:`harness.check.suite_checks` (probe) and :mod:`harness.check.agent_checks` (reset, draws).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from harness.check.agent_checks import AgentChecker
from harness.check.suite_checks import SuiteChecker
from harness.check.targets import AgentTarget, SuiteTarget, default_agent
from harness.check.verdict import ConformanceError, Report

SUITE_CHECKS = ("contract", "probe", "determinism", "schedule", "identity")
AGENT_CHECKS = ("contract", "reset", "determinism", "schedule", "draws", "identity")


def check_suite(suite: Any, *, suite_params: Mapping[str, Any] | None = None, split: str | None = None,
                episodes: int = 3, agent: Any = None, agent_params: Mapping[str, Any] | None = None,
                checks: Iterable[str] = SUITE_CHECKS, workdir: str | Path | None = None,
                examples: Mapping[str, Any] | None = None, params: Mapping[str, Any] | None = None) -> Report:
    """Check a suite (a registered name, or a suite object) against the suite contract.

    ``suite_params``: the suite's parameters for the check (keep it cheap: ``render=False``, a
    short split); with a suite object, those it was built with. ``agent``: what drives the
    episodes, a registered agent name or a factory ``(**params) -> agent``, with
    ``agent_params``; default: the suite's own ``oracle``, else its own ``random``, else an
    agent of every suite that produces its actions and needs no parameter. ``examples``: the
    other value the ``identity`` check tries for a field (by name), where the declared
    ``example=`` cannot work on this machine. ``params``: the former name of ``suite_params``
    (deprecated).
    """
    suite_params = _renamed(params, suite_params, "check_suite", "suite_params")
    target = SuiteTarget.of(suite, suite_params, split)
    agent_target = AgentTarget.of(agent, target, agent_params) if agent is not None else default_agent(target)
    checker = SuiteChecker(target, agent_target, episodes, workdir, f"suite {target.name}", examples)
    return checker.run(_checked_names(checks, SUITE_CHECKS))


def check_agent(agent: Any, suite: Any, *, agent_params: Mapping[str, Any] | None = None,
                suite_params: Mapping[str, Any] | None = None, split: str | None = None, episodes: int = 3,
                random_actions: bool | None = None, checks: Iterable[str] = AGENT_CHECKS,
                workdir: str | Path | None = None, examples: Mapping[str, Any] | None = None,
                params: Mapping[str, Any] | None = None) -> Report:
    """Check an agent (a registered name, or a factory ``(**params) -> agent``) on ``suite``.

    ``agent_params``: the agent's parameters; ``suite_params``: the suite's. ``random_actions``:
    every action the agent returns is a random draw (the ``draws`` check then applies to all
    of them, not only to fallbacks); None: true for agents registered as ``random``.
    ``examples``: as :func:`check_suite`'s (e.g. a second URL of the same test server for
    ``base_url``). ``params``: the former name of ``agent_params`` (deprecated).
    """
    agent_params = _renamed(params, agent_params, "check_agent", "agent_params")
    target = SuiteTarget.of(suite, suite_params, split)
    agent_target = AgentTarget.of(agent, target, agent_params)
    if random_actions is None:
        random_actions = agent_target.name == "random"
    checker = AgentChecker(target, agent_target, episodes, workdir, f"agent {agent_target.name} on {target.name}",
                           examples, random_actions=bool(random_actions))
    return checker.run(_checked_names(checks, AGENT_CHECKS))


def _renamed(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, where: str, name: str) -> Any:
    if old is None:
        return new
    if new is not None:
        raise TypeError(f"{where}: give {name}= only (params= is its former name)")
    warnings.warn(f"{where}(params=...) is now {name}=...", DeprecationWarning, stacklevel=3)
    return old


def _checked_names(checks: Iterable[str], known: Sequence[str]) -> list[str]:
    names = [checks] if isinstance(checks, str) else list(checks)
    for name in names:
        if name not in known:
            raise ValueError(f"unknown check {name!r}; checks are {', '.join(known)}")
    return names


__all__ = ["AGENT_CHECKS", "SUITE_CHECKS", "ConformanceError", "Report", "check_agent", "check_suite"]
