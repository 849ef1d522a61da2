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
    bounds, the field's ``example=``; others are skipped) changes the run id (:func:`harness.run.identity.run_id_of`) exactly when
    it is declared ``results=True``; a ``results=False`` field must also leave the records
    of a few episodes unchanged (a field that changes records is in the identity; where it
    sizes the split, the episodes both runs hold).

A script calling these puts its work under ``if __name__ == "__main__":``: the ``process``
executor's workers import the main script, and a worker that finds itself re-running one
stops and is named (:func:`harness.run.executors.refuse_in_worker_start`).

The checks are cheap (``episodes=`` episodes of ``split=``, the suite's default split when
not given); third-party plugins call them from their own tests.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from harness.interfaces import AgentReply, AgentRequest, InvalidOutput
from harness.metric_declaration import not_delivered
from harness.params import Composite, Field, ParamError, convert, fields_of, param
from harness.spaces import is_answer_space
from harness.check.invariants import EpisodeWatch
from harness.types import (
    INFO_ACTION_OK,
    INFO_ARTIFACTS,
    INFO_EXPERT_LENGTH,
    INFO_FEEDBACK,
    INFO_GC_SATISFIED,
    INFO_GC_TOTAL,
    INFO_INVALID_ACTIONS,
    INFO_PRIVILEGED,
    INFO_SUCCESS,
    INFO_TASK_TYPE,
    INFO_TERMINATION,
    INFO_VALUES,
    EpisodeRecord,
    EpisodeSpec,
    RunSpec,
)

SUITE_CHECKS = ("contract", "probe", "determinism", "schedule", "identity")
AGENT_CHECKS = ("contract", "reset", "determinism", "schedule", "draws", "identity")

#: Record fields that may differ with scheduling (everything else must be equal).
_TIMING = frozenset({"wall_time_s"})
_CALL_TIMING = frozenset({"latency_s", "batch"})


def _comparable(record: EpisodeRecord) -> dict[str, Any]:
    """A record's results: its fields less timings and the files kept as evidence
    (``extra["artifacts"]``: a video's path names its run)."""
    out = {k: v for k, v in dataclasses.asdict(record).items() if k not in _TIMING}
    out["extra"] = {k: v for k, v in (out.get("extra") or {}).items() if k != INFO_ARTIFACTS}
    return out


class ConformanceError(AssertionError):
    """A broken contract; ``str()`` is one line: ``<plugin>: <check>: <what is wrong>``."""


@dataclass
class Report:
    """What a check run did: the checks passed, and what it skipped and why."""

    subject: str
    passed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        text = f"{self.subject}: passed {', '.join(self.passed) or 'nothing'}"
        return text + (f"; skipped: {'; '.join(self.skipped)}" if self.skipped else "")


# --- public entry points -----------------------------------------------------------
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
    target = _SuiteTarget.of(suite, suite_params, split)
    agent_target = _AgentTarget.of(agent, target, agent_params) if agent is not None else _default_agent(target)
    checker = _Checker(target, agent_target, episodes, workdir, f"suite {target.name}")
    checker.examples = dict(examples or {})
    return checker.run(_checked_names(checks, SUITE_CHECKS), identity_of="suite")


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
    target = _SuiteTarget.of(suite, suite_params, split)
    agent_target = _AgentTarget.of(agent, target, agent_params)
    if random_actions is None:
        random_actions = agent_target.name == "random"
    checker = _Checker(target, agent_target, episodes, workdir, f"agent {agent_target.name} on {target.name}")
    checker.random_actions = bool(random_actions)
    checker.examples = dict(examples or {})
    return checker.run(_checked_names(checks, AGENT_CHECKS), identity_of="agent")


def _renamed(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, where: str, name: str) -> Any:
    if old is None:
        return new
    if new is not None:
        raise TypeError(f"{where}: give {name}= only (params= is its former name)")
    import warnings

    warnings.warn(f"{where}(params=...) is now {name}=...", DeprecationWarning, stacklevel=3)
    return old


def _checked_names(checks: Iterable[str], known: Sequence[str]) -> list[str]:
    names = [checks] if isinstance(checks, str) else list(checks)
    for name in names:
        if name not in known:
            raise ValueError(f"unknown check {name!r}; checks are {', '.join(known)}")
    return names


# --- what is checked ---------------------------------------------------------------------
@dataclass
class _SuiteTarget:
    name: str
    values: dict[str, Any]
    declaration: Any
    build: Callable[..., Any]
    obj: Any
    split: str
    registered: bool

    @classmethod
    def of(cls, suite: Any, params: Mapping[str, Any] | None, split: str | None) -> "_SuiteTarget":
        from harness.registry.catalog import SUITES

        values = dict(params or {})
        if isinstance(suite, str):
            plugin = SUITES.entry(suite)
            build = lambda **v: SUITES.build(suite, **v)  # noqa: E731
            obj, name, declaration, registered = build(**values), suite, plugin.params, True
        else:
            obj, name = suite, suite.name
            registered = name in SUITES.names()
            plugin = SUITES.entry(name) if registered else None
            declaration = plugin.params if plugin is not None else getattr(type(suite), "Params", None)
            build = (lambda **v: SUITES.build(name, **v)) if registered else (lambda **v: type(suite)(**v))
        if split is None:
            split = getattr(plugin, "default_split", None) if registered else None
            split = split or list(obj.splits())[0]
        return cls(name, values, declaration, build, obj, split, registered)


@dataclass
class _AgentTarget:
    name: str
    values: dict[str, Any]
    declaration: Any
    build: Callable[..., Any]
    kind: str = "planner"

    @classmethod
    def of(cls, agent: Any, suite: _SuiteTarget, params: Mapping[str, Any] | None) -> "_AgentTarget":
        values = dict(params or {})
        if isinstance(agent, str):
            registry, plugin = _agent_entry(agent, suite.name)
            build = lambda **v: registry.build(agent, suite=suite.name, **v)  # noqa: E731
            return cls(agent, values, plugin.params, build, getattr(plugin, "kind", "planner"))
        if not callable(agent):
            raise TypeError("agent must be a registered agent's name or a factory (**params) -> agent")
        probe = agent(**values)
        return cls(getattr(probe, "name", type(probe).__name__), values,
                   getattr(probe, "Params", None) or getattr(type(probe), "Params", None), agent)


def _agent_entry(name: str, suite: str):
    from harness.registry.catalog import PLANNERS, POLICIES
    from harness.registry.loader import UnknownPluginError

    first: Exception | None = None
    for registry in (PLANNERS, POLICIES):
        try:
            return registry, registry.entry(name, suite)
        except UnknownPluginError as exc:
            first = first or exc
    raise first  # type: ignore[misc]


def _default_agent(suite: _SuiteTarget) -> _AgentTarget:
    """The suite's own oracle, else its own random agent, else an agent of every suite
    that produces the suite's actions and needs no parameter."""
    from harness.registry.catalog import PLANNERS, POLICIES
    from harness.registry.loader import MissingDependencyError, load_target

    for name in ("oracle", "random"):
        for registry in (PLANNERS, POLICIES):
            if suite.name in registry.owners(name):
                return _AgentTarget.of(name, suite, None)
    kind = getattr(suite.obj, "action_kind", None)
    for preferred in (True, False):
        for registry in (PLANNERS, POLICIES):
            for plugin in registry.entries():
                if getattr(plugin, "suite", None) is not None or (plugin.name in ("random", "zero")) != preferred:
                    continue
                if plugin.params is not None and not isinstance(plugin.params, Composite) and any(
                        f.required for f in fields_of(plugin.params)):
                    continue
                try:
                    factory = load_target(plugin, registry.kind)
                except (MissingDependencyError, ImportError):
                    continue
                if kind is None or kind in getattr(factory, "action_kinds", (kind,)):
                    return _AgentTarget.of(plugin.name, suite, None)
    raise ConformanceError(f"suite {suite.name}: no registered agent drives it; pass agent=")


# --- the checker ----------------------------------------------------------------------
class _Checker:
    def __init__(self, suite: _SuiteTarget, agent: _AgentTarget, episodes: int, workdir: Any, subject: str):
        if episodes < 1:
            raise ValueError("episodes must be >= 1")
        self.suite, self.agent, self.n, self.subject = suite, agent, int(episodes), subject
        self.random_actions = False
        #: Field name -> the other value the identity check tries (instead of the declared example).
        self.examples: dict[str, Any] = {}
        #: Actions the driving agent sent that the env judged valid (the probe's valid pool).
        self.valid_seen: list[Any] = []
        self.report = Report(subject)
        self._workdir = workdir
        self._base: tuple[dict, list] | None = None
        self._runs = 0

    def fail(self, check: str, message: str) -> ConformanceError:
        return ConformanceError(f"{self.subject}: {check}: {message}")

    def run(self, checks: list[str], identity_of: str) -> Report:
        from harness.run.executors import refuse_in_worker_start

        refuse_in_worker_start(f"check of {self.subject}")
        with tempfile.TemporaryDirectory(prefix="harness-check-", dir=self._workdir) as tmp:
            self.tmp = Path(tmp)
            for check in checks:
                try:
                    if check == "identity":
                        self.check_identity(identity_of)
                    else:
                        getattr(self, f"check_{check}")()
                except ConformanceError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the plugin raised: one line naming it
                    raise self.fail(check, f"raised {type(exc).__name__}: {_first_line(exc)}") from exc
                self.report.passed.append(check)
        return self.report

    # -- helpers ----------------------------------------------------------------------
    def make_agent(self, **override: Any) -> Any:
        return self.agent.build(**{**self.agent.values, **override})

    def episodes(self, suite: Any = None) -> list[EpisodeSpec]:
        return list((suite or self.suite.obj).episodes(self.suite.split)[: self.n])

    def spec(self, **kw: Any) -> RunSpec:
        return RunSpec(suite=self.suite.name, split=self.suite.split, agent=self.agent.name, variant="check",
                       agent_kind=self.agent.kind, suite_params=dict(self.suite.values),
                       agent_params=dict(self.agent.values), limit=self.n, **kw)

    def records(self, *, suite: Any = None, suite_values: Mapping[str, Any] | None = None, agent: Any = None,
                env_factory: Any = None, **kw: Any) -> tuple[dict, list, Any]:
        """One run into a fresh store: (records by key without timing, transcripts, summary)."""
        from harness.run.executors import SuiteEnvFactory
        from harness.run.runner import Runner
        from harness.store.database import ResultStore

        suite = suite if suite is not None else self.suite.obj
        values = dict(suite_values if suite_values is not None else self.suite.values)
        spec = dataclasses.replace(self.spec(**kw), suite_params=values)
        if env_factory is None and spec.executor == "process":
            if not self.suite.registered:
                raise _Skip("the process executor needs a registered suite")
            env_factory = SuiteEnvFactory(self.suite.name, values)
        self._runs += 1
        with ResultStore(self.tmp / f"run{self._runs}") as store:
            summary = Runner(spec, suite, agent if agent is not None else self.make_agent(), store,
                             env_factory=env_factory, keep_records=True).run()
            records = {r.key: _comparable(r) for r in store.records()}
            transcripts = sorted(({k: v for k, v in row.items() if k not in _CALL_TIMING}
                                  for row in store.transcripts()),
                                 key=lambda r: (str(r.get("episode_id")), str(r.get("seed")), r.get("call", 0)))
        if len(records) != summary.total - summary.skipped:
            raise self.fail("runner", f"{summary.total} episodes selected but {len(records)} records stored")
        return records, transcripts, summary

    def base(self) -> tuple[dict, list]:
        """The reference run: lockstep, local executor."""
        if self._base is None:
            records, transcripts, _ = self.records(pipeline=False, batch_size=max(2, self.n))
            if not records:
                raise self.fail("runner", f"split {self.suite.split} has no episode to run")
            for key, row in records.items():
                if row["error_kind"] is not None:
                    raise self.fail("runner", f"episode {key[2]} {_error_rule(self.suite.name, row)}")
            self._base = (records, transcripts)
        return self._base

    def same_records(self, check: str, what: str, got: tuple[dict, list], want: tuple[dict, list],
                     nested: bool = False) -> None:
        """The records and transcripts of two runs equal. ``nested``: one run's episodes may be
        a prefix of the other's (a parameter that sizes the split, checked on a split no longer
        than the episodes checked); those they share must be equal."""
        (records, transcripts), (ref, ref_t) = got, want
        if nested and records.keys() != ref.keys() and (records.keys() <= ref.keys() or ref.keys() <= records.keys()):
            shared = records.keys() & ref.keys()
            keep = lambda rows: [t for t in rows if any(  # noqa: E731
                (t.get("episode_id"), t.get("seed")) == (k[2], k[3]) for k in shared)]
            records, ref = {k: records[k] for k in shared}, {k: ref[k] for k in shared}
            transcripts, ref_t = keep(transcripts), keep(ref_t)
        if records.keys() != ref.keys():
            raise self.fail(check, f"{what}: other episodes ({sorted(records)[:3]} vs {sorted(ref)[:3]})")
        for key, row in ref.items():
            other = records[key]
            if row["error_kind"] is None and other.get("error_kind") is not None:
                raise self.fail(check, f"{what}: episode {key[2]} ended with an error ({other['error_kind']}): "
                                       f"{((other.get('error_message') or '').strip().splitlines() or [''])[-1]}")
            differ = [k for k in row if k not in ("run_id",) and _differs(row[k], other.get(k)) is not None]
            if differ:
                k = differ[0]
                raise self.fail(check, f"{what}: episode {key[2]} differs in {k} "
                                       f"({_short(other.get(k))} vs {_short(row[k])})")
        if transcripts != ref_t:
            raise self.fail(check, f"{what}: the transcripts differ ({len(transcripts)} vs {len(ref_t)} rows)")

    # -- contract -------------------------------------------------------------------
    def check_contract(self) -> None:
        suite, split = self.suite.obj, self.suite.split
        c = "contract"
        if split not in list(suite.splits()):
            raise self.fail(c, f"split {split!r} is not in splits() ({', '.join(suite.splits())})")
        try:
            suite.episodes(f"no-such-split-{uuid.uuid4().hex[:6]}")
        except KeyError:
            pass
        except Exception as exc:  # noqa: BLE001 - named in the message
            raise self.fail(c, f"episodes(<unknown split>) must raise KeyError, raised {type(exc).__name__}")
        else:
            raise self.fail(c, "episodes(<unknown split>) must raise KeyError, returned")
        proto = suite.protocol(split)
        try:
            json.dumps(dict(proto), sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise self.fail(c, f"protocol({split!r}) is not JSON-serialisable: {exc}") from None
        max_steps = proto.get("max_steps")
        if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
            raise self.fail(c, f"protocol({split!r}) must hold max_steps (a whole number >= 1), got {max_steps!r}")
        for attr in ("name", "version"):
            if not isinstance(getattr(suite, attr, None), str):
                raise self.fail(c, f"suite.{attr} must be a string")
        first = self.episodes()
        if not first:
            raise self.fail(c, f"split {split!r} has no episodes")
        again = self.episodes(self.suite.build(**self.suite.values))
        if [e.key for e in first] != [e.key for e in again] or [e.key for e in first] != [e.key for e in self.episodes()]:
            raise self.fail(c, f"episodes({split!r}) is not in a fixed order (another call or suite object "
                               "gives other episodes first)")
        keys = [e.key for e in first]
        if len(set(keys)) != len(keys):
            raise self.fail(c, f"episodes({split!r}) repeats an episode key")
        for e in first:
            if not isinstance(e, EpisodeSpec):
                raise self.fail(c, f"episodes({split!r}) must hold EpisodeSpec, got {type(e).__name__}")
            if e.suite != suite.name or e.split != split:
                raise self.fail(c, f"episode {e.episode_id} says suite {e.suite!r} split {e.split!r}, "
                                   f"not {suite.name!r} {split!r}")
            if not isinstance(e.seed, int) or isinstance(e.seed, bool):
                raise self.fail(c, f"episode {e.episode_id}: seed must be an int, got {e.seed!r}")
            try:
                json.dumps(dict(e.metadata))
            except (TypeError, ValueError):
                raise self.fail(c, f"episode {e.episode_id}: metadata is not JSON-serialisable") from None
        limit = max_steps + int(proto.get("max_invalid_actions", 0) or 0)
        env = suite.make_env()
        try:
            for e in first[: min(2, len(first))]:
                self.play(env, e, self.make_agent(), limit)
        finally:
            _close(env)

    def play(self, env: Any, episode: EpisodeSpec, agent: Any, limit: int) -> list[Any]:
        """One episode on ``env`` driven by ``agent`` outside the runner, every return
        checked; the trace (observations, rewards, flags, infos) for determinism checks."""
        c = "contract"
        privileged = bool(getattr(agent, "privileged", False))
        options = {"episode": episode, "privileged": privileged, "render": bool(getattr(agent, "reads_images", True)),
                   "artifacts_dir": None}
        out = env.reset(seed=episode.seed, options=options)
        if not isinstance(out, tuple) or len(out) != 2:
            raise self.fail(c, f"reset() must return (observation, info), got {_short(out)}")
        obs, info = out
        self.check_info(info, "reset", privileged, done=False)
        watch = self.watch(env, episode)
        self.watched(c, watch.reset(obs, info))
        trace: list[Any] = [("reset", obs, _without_privileged(info))]
        agent.reset(episode)
        history: list[tuple[Any, str]] = []
        stepped = 0
        replan = getattr(agent, "replan_steps", None)
        for _call in range(limit + 2):
            plans = agent.act([AgentRequest(episode, obs, info, tuple(history))])
            if not isinstance(plans, (list, tuple)) or len(plans) != 1:
                raise self.fail(c, f"act() must return one plan per request, got {_short(plans)} for 1")
            plan = plans[0]
            actions = plan.actions if isinstance(plan, AgentReply) else plan
            if isinstance(plan, AgentReply) and plan.output_error is not None and not len(actions):
                actions = [InvalidOutput(plan.raw_output or "", plan.output_error)]
            if not len(actions):
                return trace  # an empty plan ends the episode (the runner's rule)
            if replan is not None:
                actions = actions[: int(replan)]
            for action in actions:
                step = env.step(action)
                stepped += 1
                if not isinstance(step, tuple) or len(step) != 5:
                    raise self.fail(c, "step() must return (observation, reward, terminated, truncated, info)")
                obs, reward, terminated, truncated, info = step
                if not isinstance(reward, (int, float)) or isinstance(reward, bool) or not math.isfinite(reward):
                    raise self.fail(c, f"step() reward must be a finite number, got {_short(reward)}")
                for flag, value in (("terminated", terminated), ("truncated", truncated)):
                    if not isinstance(value, bool):
                        raise self.fail(c, f"step() {flag} must be a bool, got {_short(value)}")
                done = terminated or truncated
                self.check_info(info, "step", privileged, done=done)
                self.watched(c, watch.step(action, obs, terminated, truncated, info))
                trace.append(("step", _plain_action(action), obs, float(reward), terminated, truncated,
                              _without_privileged(info)))
                if type(action) is not InvalidOutput:
                    history.append((action, info.get(INFO_FEEDBACK, "")))
                    if info[INFO_ACTION_OK] is True:
                        self.valid_seen.append(action)
                if done:
                    self.watched(c, watch.after_end(env, action))
                    return trace
                if stepped > limit:
                    raise self.fail(c, f"episode {episode.episode_id} did not end within {limit} steps "
                                       "(protocol max_steps plus max_invalid_actions)")
                if info[INFO_ACTION_OK] is False:
                    break
        raise self.fail(c, f"episode {episode.episode_id} did not end within {limit} agent calls")

    def check_info(self, info: Any, where: str, privileged: bool, done: bool) -> None:
        c = "contract"
        if not isinstance(info, dict):
            raise self.fail(c, f"{where}() info must be a dict, got {type(info).__name__}")
        required = {INFO_SUCCESS: (bool,), INFO_GC_SATISFIED: (int,), INFO_GC_TOTAL: (int,),
                    INFO_INVALID_ACTIONS: (int,)}
        if where == "step":
            required[INFO_ACTION_OK] = (bool,)
        for key, types in required.items():
            if key not in info:
                raise self.fail(c, f"{where}() info lacks {key!r} (harness.types INFO_*)")
            value = info[key]
            if not isinstance(value, types) or (types == (int,) and isinstance(value, bool)):
                raise self.fail(c, f"{where}() info[{key!r}] must be {types[0].__name__}, got {_short(value)}")
        optional = {INFO_FEEDBACK: (str,), INFO_EXPERT_LENGTH: (int, type(None)), INFO_TASK_TYPE: (str, type(None)),
                    INFO_TERMINATION: (str, type(None))}
        for key, types in optional.items():
            if key in info and not isinstance(info[key], types):
                raise self.fail(c, f"{where}() info[{key!r}] must be {' or '.join(t.__name__ for t in types)}, "
                                   f"got {_short(info[key])}")
        values = info.get(INFO_VALUES, {})
        if not isinstance(values, dict) or not all(
                isinstance(k, str) and (v is None or isinstance(v, (int, float))) for k, v in values.items()):
            raise self.fail(c, f"{where}() info[{INFO_VALUES!r}] must map names to numbers or None, got {_short(values)}")
        from harness.scoring.policy import suite_scoring

        undelivered = not_delivered(self.suite.name, suite_scoring(self.suite.name)[0], values)
        if undelivered:
            raise self.fail(c, f"{where}() info[{INFO_VALUES!r}]: {undelivered[0][1]}")
        if info[INFO_GC_SATISFIED] < 0 or info[INFO_GC_TOTAL] < 0 or info[INFO_INVALID_ACTIONS] < 0:
            raise self.fail(c, f"{where}() info counts must be >= 0")
        if INFO_PRIVILEGED in info and not privileged:
            raise self.fail(c, f"{where}() info holds {INFO_PRIVILEGED!r} although privileged=False")
        if privileged and where == "reset" and INFO_PRIVILEGED not in info:
            raise self.fail(c, f"reset(options={{'privileged': True}}) info lacks {INFO_PRIVILEGED!r}")

    # -- probe ------------------------------------------------------------------------
    def valid_pool(self) -> list[Any]:
        """Distinct actions the driving agent sent that the env judged valid (its first episodes)."""
        if not self.valid_seen:
            env = self.suite.obj.make_env()
            try:
                proto = self.suite.obj.protocol(self.suite.split)
                limit = int(proto["max_steps"]) + int(proto.get("max_invalid_actions", 0) or 0)
                for e in self.episodes()[:2]:
                    self.play(env, e, self.make_agent(), limit)
            finally:
                _close(env)
        pool: list[Any] = []
        seen: set[str] = set()
        for action in self.valid_seen:
            key = json.dumps(_plain_action(action), sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                pool.append(action)
        return pool

    def check_probe(self) -> None:
        c = "probe"
        suite, split = self.suite.obj, self.suite.split
        proto = suite.protocol(split)
        max_steps, max_invalid = int(proto["max_steps"]), int(proto.get("max_invalid_actions", 0) or 0)
        limit = max_steps + max_invalid
        text = getattr(suite, "action_kind", "text") == "text"
        pool = self.valid_pool()
        episodes = self.episodes()
        self.probe_declaration()

        # 1. Invalid-action handling, from the start of each episode.
        env = suite.make_env()
        try:
            for e in episodes[:2]:
                self.probe_invalid(env, e, text, pool)
        finally:
            _close(env)

        # 2. Step limits: whatever the agent sends, the episode ends in time.
        sequences = _probe_sequences(pool, text, limit)
        env = suite.make_env()
        try:
            for e in episodes:
                for what, actions in sequences:
                    trace, ended = self.replay(env, e, actions(e), limit + 1)
                    if not ended:
                        raise self.fail(c, f"episode {e.episode_id} did not end within {limit} steps (protocol "
                                           f"max_steps {max_steps} plus max_invalid_actions {max_invalid}) "
                                           f"driven by {what}: the env never reaches its step limit")
        finally:
            _close(env)

        # 3. No state leaks between episodes: an episode replays the same after others.
        first = episodes[0]
        mixed = _probe_mix(pool, text, limit)
        env_a, env_b = suite.make_env(), suite.make_env()
        try:
            a, _ = self.replay(env_a, first, mixed(first), limit + 1)
            for other in episodes[1:] or episodes:
                self.replay(env_a, other, mixed(other), limit + 1)
            again, _ = self.replay(env_a, first, mixed(first), limit + 1)
            fresh, _ = self.replay(env_b, first, mixed(first), limit + 1)
        finally:
            _close(env_a)
            _close(env_b)
        if _first_difference(a, fresh) is None and _first_difference(a, again) is not None:
            # A difference on the reused env alone may still be chance: two more fresh envs tell.
            for _ in range(2):
                env_c = suite.make_env()
                try:
                    fresh, _ = self.replay(env_c, first, mixed(first), limit + 1)
                finally:
                    _close(env_c)
                if _first_difference(a, fresh) is not None:
                    break
        where = _first_difference(a, fresh)
        if where is not None:  # two fresh envs, the same seed and actions: not deterministic
            raise self.fail(c, f"episode {first.episode_id} seed {first.seed} driven by the probe (invalid, unusable "
                               f"and random valid actions) on two fresh envs: {where}; not deterministic (a reset "
                               "with the same seed and the same actions must give the same episode)")
        where = _first_difference(a, again)
        if where is not None:
            raise self.fail(c, f"episode {first.episode_id} driven by the probe (invalid, unusable and random "
                               f"valid actions) on the same env after other episodes: {where}; state leaks "
                               "between episodes")

        # 4. Through the runner: no error record, every class declared.
        if text:
            agent = _ProbeAgent(pool, limit, [e.key for e in episodes])
            records, _, _ = self.records(agent=agent, pipeline=False, batch_size=max(2, self.n))
            self.probe_records(records)

    def probe_declaration(self) -> None:
        from harness.registry.catalog import SUITES
        from harness.scoring.failures import declaration_problem

        if not self.suite.registered:
            return
        problem = declaration_problem(tuple(getattr(SUITES.entry(self.suite.name), "failure_classes", ()) or ()))
        if problem is not None:
            raise self.fail("probe", problem)

    def probe_records(self, records: Mapping[Any, Mapping[str, Any]]) -> None:
        from harness.scoring.failures import GENERIC, classify, declared_classes, rules_for

        c = "probe"
        rules = rules_for(self.suite.name) if self.suite.registered else None
        declared = ({f.name for f in declared_classes(self.suite.name)} if self.suite.registered else set(GENERIC))
        for key, row in records.items():
            if row["error_kind"] is not None:
                raise self.fail(c, f"episode {key[2]} driven by the probe (invalid, unusable and random valid "
                                   f"actions) {_error_rule(self.suite.name, row)}")
            cls = classify(row, rules=rules) if rules is not None else classify(row)
            if cls not in declared:
                raise self.fail(c, f"episode {key[2]} is classed {cls!r}, a failure class the suite does not declare "
                                   "(SuitePlugin.failure_classes)")

    def probe_invalid(self, env: Any, episode: EpisodeSpec, text: bool, pool: list[Any]) -> None:
        from harness.interfaces import AgentContractError

        c = "probe"
        options = {"episode": episode, "privileged": False, "render": False, "artifacts_dir": None}
        if text:
            answers = is_answer_space(getattr(env, "action_space", None))
            for bad in (f"probe: no such action {uuid.uuid4().hex[:6]}", "",
                        InvalidOutput("{not json", "conformance probe: unusable output")):
                _, info = env.reset(seed=episode.seed, options=options)
                before = int(info.get(INFO_INVALID_ACTIONS, 0))
                try:
                    step = env.step(bad)
                except AgentContractError:
                    continue  # refused outright: never fed to the simulator
                except Exception as exc:  # noqa: BLE001 - named in the message
                    raise self.fail(c, f"step({_short(bad)}) raised {type(exc).__name__}: {_first_line(exc)} "
                                       "(an invalid action is counted, not raised)") from None
                info = step[4]
                if answers and type(bad) is str and bad:
                    continue  # a free-text answer: any non-empty text may be a valid one
                if answers and info.get(INFO_ACTION_OK) is not False:
                    self.probe_scored_as_unusable(episode, bad, info)
                    continue
                if info.get(INFO_ACTION_OK) is not False:
                    raise self.fail(c, f"episode {episode.episode_id}: the unknown action {_short(bad)} was accepted "
                                       "as valid (action_ok must be False)")
                if type(bad) is InvalidOutput and bad.costs_step:
                    continue
                after = int(info.get(INFO_INVALID_ACTIONS, 0))
                if after != before + 1:
                    how = "was not counted" if after == before else f"was counted {after - before} times"
                    raise self.fail(c, f"episode {episode.episode_id}: the unknown action {_short(bad)} {how} "
                                       f"(invalid_actions {before} -> {after}; one invalid action is counted once)")
            return
        if not pool:
            self.report.skipped.append("probe: no valid action seen to shape invalid ones")
            return
        import numpy as np

        shape = np.asarray(pool[0]).shape
        for what, bad in (("a NaN action", np.full(shape, np.nan)),
                          ("an action of the wrong shape", np.zeros((int(np.prod(shape)) + 1,)))):
            env.reset(seed=episode.seed, options=options)
            try:
                step = env.step(bad)
            except AgentContractError:
                continue  # refused before the simulator saw it
            except Exception as exc:  # noqa: BLE001
                raise self.fail(c, f"step({what}) raised {type(exc).__name__}, not AgentContractError") from None
            if step[4].get(INFO_ACTION_OK) is not False:  # or counted as an invalid action (EB-Manipulation's rule)
                raise self.fail(c, f"episode {episode.episode_id}: step({what}) was accepted as valid (raise "
                                   "AgentContractError, or count it with action_ok=False)")

    def probe_scored_as_unusable(self, episode: EpisodeSpec, bad: Any, info: Mapping[str, Any]) -> None:
        """A free-text answer suite took an empty or unusable answer as valid: it must score it as
        such (no success, no higher-is-better metric above its worst end)."""
        from harness.scoring.policy import suite_scoring

        what = f"episode {episode.episode_id}: the {'empty' if bad == '' else 'unusable'} answer {_short(bad)}"
        if info.get(INFO_SUCCESS):
            raise self.fail("probe", f"{what} succeeded (refuse it with action_ok=False, or score it as a failure)")
        values = info.get(INFO_VALUES) or {}
        for m in suite_scoring(self.suite.name)[0]:
            x = values.get(m.value)
            if m.higher_is_better and isinstance(x, (int, float)) and x > float(m.range[0]):
                raise self.fail("probe", f"{what} scored {m.name} {x:g}, above its worst {float(m.range[0]):g} "
                                         "(refuse it with action_ok=False, or score it as such)")

    def replay(self, env: Any, episode: EpisodeSpec, actions: Sequence[Any], limit: int) -> tuple[list[Any], bool]:
        """``actions`` stepped open-loop on ``episode`` (at most ``limit``): the trace, and
        whether the episode ended."""
        options = {"episode": episode, "privileged": False, "render": False, "artifacts_dir": None}
        obs, info = env.reset(seed=episode.seed, options=options)
        watch = self.watch(env, episode)
        self.watched("probe", watch.reset(obs, info), info)
        trace: list[Any] = [("reset", obs, _without_privileged(info))]
        for action in list(actions)[:limit]:
            obs, reward, terminated, truncated, info = env.step(action)
            self.watched("probe", watch.step(action, obs, terminated, truncated, info), info)
            trace.append(("step", _plain_action(action), obs, float(reward), terminated, truncated,
                          _without_privileged(info)))
            if terminated or truncated:
                self.watched("probe", watch.after_end(env, action))
                return trace, True
        return trace, False

    def watch(self, env: Any, episode: EpisodeSpec) -> EpisodeWatch:
        return EpisodeWatch(env, episode.episode_id, bool(getattr(self.suite.obj, "success_at_stop", False)))

    def watched(self, check: str, problem: str | None, info: Any = None) -> None:
        """Fail ``check`` with the episode invariant broken (:mod:`harness.check.invariants`),
        or with ``info`` (of an episode reset with privileged=False) holding the privileged state."""
        if problem is not None:
            raise self.fail(check, problem)
        if isinstance(info, Mapping) and INFO_PRIVILEGED in info:
            raise self.fail(check, f"info holds {INFO_PRIVILEGED!r} although privileged=False")

    # -- determinism ----------------------------------------------------------------
    def check_determinism(self) -> None:
        c = "determinism"
        episodes = self.episodes()
        limit = 10 * (self.suite.obj.protocol(self.suite.split)["max_steps"] + 10)
        first, second = episodes[0], episodes[min(1, len(episodes) - 1)]
        env_a, env_b = self.suite.obj.make_env(), self.suite.obj.make_env()
        try:
            a = self.play(env_a, first, self.make_agent(), limit)
            twice = self.play(env_a, first, self.make_agent(), limit)  # reset again with the same seed
            self.play(env_a, second, self.make_agent(), limit)
            again = self.play(env_a, first, self.make_agent(), limit)  # the same env, reused
            fresh = self.play(env_b, first, self.make_agent(), limit)
        finally:
            _close(env_a)
            _close(env_b)
        # Gymnasium's check_reset_seed_determinism: one env reset twice with the same seed.
        for what, other, rule in (
                ("a fresh env", fresh, "not deterministic (two envs reset with the same seed must give the "
                                       "same episode)"),
                ("the same env after another episode", again, "state leaks between episodes"),
                ("the same env, reset again at once with the same seed", twice,
                 "not deterministic (a second reset with the same seed must give the same episode, as "
                 "Gymnasium's check_reset_seed_determinism asks)")):
            where = _first_difference(a, other)
            if where is not None:
                raise self.fail(c, f"episode {first.episode_id} seed {first.seed} twice on {what}: {where}; {rule}")
        self.same_records(c, "a second run", self.records(pipeline=False, batch_size=max(2, self.n))[:2], self.base())

    # -- schedule ---------------------------------------------------------------------
    def check_schedule(self) -> None:
        c = "schedule"
        base = self.base()
        got = self.records(agent=_Jitter(self.make_agent()), pipeline=True, batch_wait_s=0.0,
                           batch_size=max(2, self.n))
        self.same_records(c, "pipelined vs lockstep (local executor)", got[:2], base)
        try:
            got = self.records(agent=_Jitter(self.make_agent()), pipeline=True, batch_wait_s=0.0,
                               executor="process", num_workers=2, batch_size=max(2, self.n))
        except _Skip as skip:
            self.report.skipped.append(f"schedule on the process executor: {skip}")
            return
        self.same_records(c, "process executor vs local", got[:2], base)

    # -- reset ------------------------------------------------------------------------
    def check_reset(self) -> None:
        c = "reset"
        episodes = self.episodes()
        victim = episodes[0]
        for pipeline in (False, True):
            marker = self.tmp / f"fault-{uuid.uuid4().hex[:8]}"
            faulty = _FaultOnce(self.suite.obj.make_env, victim.episode_id, str(marker))
            probe = _Probe(self.make_agent())
            _, _, summary = self.records(agent=probe, env_factory=faulty, pipeline=pipeline, batch_wait_s=0.0,
                                         batch_size=max(2, self.n), max_retries=1)
            how = "pipelined" if pipeline else "lockstep"
            if probe.violations:
                raise self.fail(c, f"{how}: {probe.violations[0]}")
            if not marker.exists():
                raise self.fail(c, f"{how}: the injected fault of episode {victim.episode_id} never ran "
                                   "(it took no step)")
            for record in summary.records or ():
                resets = probe.resets.get(record.key, 0)
                if record.error_kind not in (None, "env", "worker") or record.key not in probe.acted:
                    continue  # an agent error or no call: nothing to count against
                if resets != record.attempts:
                    raise self.fail(c, f"{how}: episode {record.episode_id} was reset {resets} times in "
                                       f"{record.attempts} attempts (exactly one agent.reset() per attempt)")
            if probe.resets.get(victim.key, 0) < 2:
                raise self.fail(c, f"{how}: episode {victim.episode_id} was retried after a fault but reset "
                                   f"{probe.resets.get(victim.key, 0)} time(s)")

    # -- draws ------------------------------------------------------------------------
    def check_draws(self) -> None:
        c = "draws"
        probe = _Probe(self.make_agent())
        self.records(agent=probe, pipeline=False, batch_size=max(2, self.n))
        draws = probe.fallbacks if not self.random_actions else probe.plans
        kind = "random actions" if self.random_actions else "fallback actions"
        per_episode = {k: v for k, v in draws.items() if v}
        if not per_episode:
            self.report.skipped.append(f"draws: the agent drew no {kind} in {self.n} episodes")
            return
        for key, seq in per_episode.items():
            if len(seq) >= 3 and all(d == seq[0] for d in seq):
                raise self.fail(c, f"all {len(seq)} {kind} of episode {key[2]} are the same draw "
                                   f"({_short(seq[0])}): draws must differ per call")
        if len(per_episode) >= 2:
            firsts = [seq[0] for seq in per_episode.values()]
            if all(d == firsts[0] for d in firsts):
                raise self.fail(c, f"every episode's first {kind[:-1]} is the same draw ({_short(firsts[0])}): "
                                   "draws must be seeded per episode")

    # -- identity ---------------------------------------------------------------------
    def check_identity(self, whose: str) -> None:
        from harness.run.identity import run_id_of, run_identity

        c = "identity"
        is_suite = whose == "suite"
        target = self.suite if is_suite else self.agent
        declaration = target.declaration
        base_obj = self.suite.obj if is_suite else self.make_agent()
        if declaration is None:
            self.report.skipped.append(f"identity: the {whose} declares no parameters")
            return
        fields = _declared_fields(declaration, target.values, self.suite.name)
        if fields and getattr(base_obj, "params", None) is None:
            raise self.fail(c, f"the {whose} declares parameters but its object has no .params "
                               "(self.params = parse(Params, values))")
        base_agent = self.make_agent() if is_suite else base_obj
        spec = self.spec()
        base_id = run_id_of(run_identity(spec, self.suite.obj, base_agent))
        for f in fields:
            current = target.values.get(f.name, f.default)
            new = _vary(dataclasses.replace(f, rule=dataclasses.replace(f.rule, example=self.examples[f.name]))
                        if f.name in self.examples else f, current)
            if new is _NOTHING:
                self.report.skipped.append(f"identity: {f.name} (no other value to try; give it example=)")
                continue
            values = {**target.values, f.name: new}
            try:
                obj = target.build(**values)
            except Exception as exc:  # noqa: BLE001 - a value this machine cannot build (an extra missing)
                self.report.skipped.append(f"identity: {f.name}={_short(new)} did not build "
                                           f"({type(exc).__name__}: {_first_line(exc)})")
                continue
            suite_obj, agent_obj = (obj, base_agent) if is_suite else (self.suite.obj, obj)
            try:
                other_id = run_id_of(run_identity(dataclasses.replace(
                    spec, suite_params=values if is_suite else spec.suite_params,
                    agent_params=spec.agent_params if is_suite else values), suite_obj, agent_obj))
            except Exception as exc:  # noqa: BLE001
                self.report.skipped.append(f"identity: {f.name}={_short(new)}: no run identity "
                                           f"({type(exc).__name__}: {_first_line(exc)})")
                continue
            change = f"{f.name} {_short(current)} -> {_short(new)}"
            if f.rule.via_identity and other_id != base_id:
                continue  # what it names differs, and the plugin's identity says so
            if f.rule.results and not f.rule.via_identity and other_id == base_id:
                raise self.fail(c, f"{whose} parameter {change} is declared results=True but leaves the run id "
                                   "unchanged")
            if not f.rule.results or f.rule.via_identity:
                # Left out of the run identity (or naming the same thing): the records must not move.
                if other_id != base_id:
                    raise self.fail(c, f"{whose} parameter {change} is declared results=False but changes the "
                                       "run id")
                got = (self.records(suite=obj, suite_values=values, pipeline=False, batch_size=max(2, self.n))
                       if is_suite else self.records(agent=obj, pipeline=False, batch_size=max(2, self.n)))
                try:
                    self.same_records(c, f"{whose} parameter {change}", got[:2], self.base(), nested=True)
                except ConformanceError as exc:
                    raise self.fail(c, f"{whose} parameter {change} is declared results=False (left out of the "
                                       f"run identity) but changes the records: "
                                       f"{str(exc).split(': ', 3)[-1]}") from None


class _Skip(Exception):
    pass


_NOTHING = object()


def _declared_fields(declaration: Any, values: Mapping[str, Any], suite: str) -> list[Field]:
    if isinstance(declaration, Composite):
        return [f for g in declaration.groups(values, suite) for f in fields_of(g.params)]
    return list(fields_of(declaration))


def _vary(f: Field, current: Any) -> Any:
    """Another valid value for ``f`` than ``current``, inside the field's declared range
    (its bounds and choices), or ``_NOTHING``. Values compare as the declaration converts
    them (a tuple default and an equal list are the same value)."""
    rule = f.rule
    candidates: list[Any] = []
    if rule.example is not None:
        candidates.append(rule.example)
    if rule.choices is not None:
        candidates += [c for c in rule.choices if c != current]
    elif isinstance(current, bool):
        candidates.append(not current)
    elif isinstance(current, int):
        candidates += [current + 1, current - 1]
    elif isinstance(current, float):
        candidates += [current + 1.0, current - 1.0, current * 2 if current else 0.5, current / 2]
    try:
        now = _canonical(convert(f, current))
    except ParamError:
        now = _canonical(current)
    for new in candidates:
        try:
            value = convert(f, new)
        except ParamError:
            continue
        if not _in_range(rule, value):
            continue
        if _canonical(value) != now:
            return value
    return _NOTHING


def _in_range(rule: Any, value: Any) -> bool:
    """``value`` (each item of a list) inside the rule's declared bounds."""
    items = value if isinstance(value, (list, tuple)) else [value]
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if (rule.ge is not None and v < rule.ge) or (rule.gt is not None and v <= rule.gt) or \
                (rule.le is not None and v > rule.le) or (rule.lt is not None and v >= rule.lt):
            return False
    return True


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


# --- probes and wrappers ---------------------------------------------------------------------
class _Forward:
    """Forwards every attribute the runner reads (name, privileged, params, reads_images,
    replan_steps, max_concurrent_calls, action_kinds) to the wrapped agent."""

    def __init__(self, inner: Any):
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def identity(self) -> Mapping[str, Any]:
        return self.inner.identity()

    def reset(self, episode: EpisodeSpec) -> None:
        self.inner.reset(episode)

    def act(self, requests: Sequence[AgentRequest]) -> Any:
        return self.inner.act(requests)


class _Jitter(_Forward):
    """Sleeps a random few milliseconds per call (its own RNG, not the agent's), so that
    pipelined calls take shifting sets of ready episodes."""

    def __init__(self, inner: Any):
        super().__init__(inner)
        self._rng = random.Random()

    def act(self, requests: Sequence[AgentRequest]) -> Any:
        time.sleep(self._rng.uniform(0.0, 0.004))
        return self.inner.act(requests)


class _Probe(_Forward):
    """Counts ``reset()`` per episode key; notes an ``act()`` for an episode never reset,
    and the actions it returned (all, and fallbacks: output_error with actions)."""

    def __init__(self, inner: Any):
        super().__init__(inner)
        import threading

        self._lock = threading.Lock()
        self.resets: dict[tuple, int] = {}
        self.acted: set[tuple] = set()
        self.violations: list[str] = []
        self.plans: dict[tuple, list[Any]] = {}
        self.fallbacks: dict[tuple, list[Any]] = {}

    def reset(self, episode: EpisodeSpec) -> None:
        with self._lock:
            self.resets[episode.key] = self.resets.get(episode.key, 0) + 1
        self.inner.reset(episode)

    def act(self, requests: Sequence[AgentRequest]) -> Any:
        with self._lock:
            for r in requests:
                if not self.resets.get(r.episode.key) and not self.violations:
                    self.violations.append(f"act() saw episode {r.episode.episode_id} before its reset()")
                self.acted.add(r.episode.key)
        plans = self.inner.act(requests)
        with self._lock:
            for r, plan in zip(requests, plans if isinstance(plans, (list, tuple)) else ()):
                actions = plan.actions if isinstance(plan, AgentReply) else plan
                drawn = [_plain_action(a) for a in actions] if actions is not None else []
                self.plans.setdefault(r.episode.key, []).append(drawn)
                if isinstance(plan, AgentReply) and plan.output_error is not None and drawn:
                    self.fallbacks.setdefault(r.episode.key, []).append(drawn)
        return plans


@dataclass(frozen=True)
class _FaultOnce:
    """An env factory whose envs raise at the first step of ``episode_id`` once per run
    (``marker``: a file created when the fault fires, so it fires once across processes)."""

    factory: Callable[[], Any]
    episode_id: str
    marker: str

    def __call__(self) -> Any:
        return _FaultyEnv(self.factory(), self.episode_id, self.marker)


class _FaultyEnv:
    def __init__(self, env: Any, episode_id: str, marker: str):
        self.env, self.episode_id, self.marker = env, episode_id, marker
        self._current: str | None = None

    def __getattr__(self, name: str) -> Any:
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        self._current = (options or {}).get("episode").episode_id if (options or {}).get("episode") else None
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any):
        if self._current == self.episode_id:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                raise RuntimeError("conformance check: injected env fault (the episode must be retried)")
        return self.env.step(action)

    def close(self) -> None:
        _close(self.env)


# --- the probe's actions ----------------------------------------------------------------------
def _episode_rng(episode: EpisodeSpec, salt: str) -> random.Random:
    return random.Random(f"conformance-probe|{salt}|{episode.suite}|{episode.split}|{episode.episode_id}|{episode.seed}")


def _noop(pool: list[Any]) -> Any:
    import numpy as np

    return np.zeros_like(np.asarray(pool[0]))


def _probe_sequences(pool: list[Any], text: bool, limit: int) -> list[tuple[str, Callable[[EpisodeSpec], list[Any]]]]:
    """Open-loop action sequences (per episode) that must all end the episode within ``limit``."""
    out: list[tuple[str, Callable[[EpisodeSpec], list[Any]]]] = []
    n = limit + 1
    if pool and not text:
        out.append(("no-op actions (zeros)", lambda e: [_noop(pool)] * n))
    for action in pool[:4]:
        out.append((f"one valid action over and over ({_short(_plain_action(action), 40)})", lambda e, a=action: [a] * n))
    if pool:
        out.append(("random valid actions", lambda e: [_episode_rng(e, "valid").choice(pool) for _ in range(n)]))
    if text:
        out.append(("invalid strings", lambda e: [f"probe: no such action {i}" for i in range(n)]))
        out.append(("unusable output", lambda e: [InvalidOutput(f"probe {i}", "conformance probe: unusable output")
                                                  for i in range(n)]))
    return out


def _probe_mix(pool: list[Any], text: bool, limit: int) -> Callable[[EpisodeSpec], list[Any]]:
    """Per episode, a fixed mix of invalid strings, unusable outputs and random valid actions."""
    def actions(e: EpisodeSpec) -> list[Any]:
        rng = _episode_rng(e, "mix")
        out: list[Any] = []
        for i in range(limit + 1):
            roll = rng.random()
            if text and roll < 0.15:
                out.append(f"probe: no such action {i}")
            elif text and roll < 0.25:
                out.append(InvalidOutput(f"probe {i}", "conformance probe: unusable output"))
            elif pool:
                out.append(rng.choice(pool))
            elif not text:
                break
            else:
                out.append(f"probe: no such action {i}")
        return out

    return actions


class _ProbeAgent:
    """A planner that sends, per episode, random valid actions (seeded by the episode) after
    an opening chosen by the episode's place in the split: none, one unusable output, or one
    invalid string. What check_suite's ``probe`` runs through the runner."""

    name = "conformance-probe"
    privileged = False
    reads_images = False

    def __init__(self, pool: list[Any], limit: int, keys: Sequence[tuple] = ()):
        self.pool, self.limit = list(pool), limit
        self._opening = {k: i % 3 for i, k in enumerate(keys)}
        self._calls: dict[tuple, int] = {}
        self._rng: dict[tuple, random.Random] = {}

    def identity(self) -> Mapping[str, Any]:
        return {"agent": self.name, "pool": [_plain_action(a) for a in self.pool]}

    def reset(self, episode: EpisodeSpec) -> None:
        self._calls[episode.key] = 0
        self._rng[episode.key] = _episode_rng(episode, "runner")

    def act(self, requests: Sequence[AgentRequest]) -> list[Any]:
        out: list[Any] = []
        for r in requests:
            k = self._calls[r.episode.key]
            self._calls[r.episode.key] = k + 1
            opening = self._opening.get(r.episode.key, 1)
            if k == 0 and opening == 1:
                out.append(AgentReply((), raw_output="{not json", output_error="conformance probe: unusable output"))
            elif (k == 0 and opening == 2) or not self.pool:
                out.append([f"probe: no such action {k}"])
            else:
                out.append([self._rng[r.episode.key].choice(self.pool)])
        return out

# --- comparisons ------------------------------------------------------------------------------
def _error_rule(suite: str, row: Mapping[str, Any]) -> str:
    """How an error record of a check's run breaks the contract, naming the rule: what the suite
    declares (the runner's record checks, :mod:`harness.run.record_checks`, whose messages name the
    suite), an env that raised, an action refused with an error, a time limit."""
    kind = row.get("error_kind")
    lines = (row.get("error_message") or "").strip().splitlines()
    if kind == "env" and lines and lines[0].startswith(f"suite {suite}: "):
        return f"ended in an env error record: what the suite declares is broken: {'; '.join(lines)}"
    rule = {"env": "the env raised (an invalid or unusable action is counted, not raised)",
            "agent": "the env refused an action with an error (a text action it cannot use is counted, "
                     "with action_ok=False)",
            "timeout": "ran past its wall-clock limit (an episode ends within its step limit)",
            "worker": "its worker process died"}.get(str(kind), f"ended in an {kind} error")
    return f"ended in an {kind} error: {rule}: {lines[-1] if lines else ''}"


def _first_difference(a: list[Any], b: list[Any]) -> str | None:
    """Where two traces first differ (the first entry that differs, else their lengths)."""
    for i, (x, y) in enumerate(zip(a, b)):
        where = _differs(x, y)
        if where is not None:
            return f"{'reset' if i == 0 else f'step {i}'} differs at {where}"
    if len(a) != len(b):
        return f"{len(a) - 1} steps, then {len(b) - 1}"
    return None


def _differs(x: Any, y: Any, path: str = "") -> str | None:
    """Where ``x`` and ``y`` differ (a path like ``[2]['image']``), None when equal."""
    import numpy as np

    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        xa, ya = np.asarray(x), np.asarray(y)
        if xa.shape != ya.shape or xa.dtype != ya.dtype or not np.array_equal(xa, ya, equal_nan=xa.dtype.kind == "f"):
            return path or "the array"
        return None
    if isinstance(x, Mapping) and isinstance(y, Mapping):
        if set(x) != set(y):
            return f"{path} keys {sorted(map(str, set(x) ^ set(y)))}"
        for k in x:
            where = _differs(x[k], y[k], f"{path}[{k!r}]")
            if where is not None:
                return where
        return None
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        if len(x) != len(y):
            return f"{path} (length {len(x)} vs {len(y)})"
        for i, (u, v) in enumerate(zip(x, y)):
            where = _differs(u, v, f"{path}[{i}]")
            if where is not None:
                return where
        return None
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return None
    if hasattr(x, "tobytes") and hasattr(y, "tobytes") and type(x) is type(y) and not isinstance(x, (bytes, str)):
        return None if x.tobytes() == y.tobytes() else (path or "an image")  # PIL images
    try:
        same = bool(x == y)
    except Exception:  # noqa: BLE001
        same = False
    return None if same else (path or "the value")


def _plain_action(action: Any) -> Any:
    import numpy as np

    if isinstance(action, np.ndarray):
        return action.tolist()
    if isinstance(action, InvalidOutput):
        return ("invalid", action.raw)
    if isinstance(action, (list, tuple)):
        return [_plain_action(a) for a in action]
    return action


def _without_privileged(info: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k != INFO_PRIVILEGED}


def _short(value: Any, width: int = 60) -> str:
    text = repr(value).replace("\n", " ")
    return text if len(text) <= width else text[: width - 3] + "..."


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _close(env: Any) -> None:
    close = getattr(env, "close", None)
    if close is not None:
        try:
            close()
        except Exception:  # noqa: BLE001 - closing must not hide the check's verdict
            pass


# --- a scripted model backend -------------------------------------------------------------------
#: What a scripted reply function sees: the conversation's text parts joined, the output schema
#: (or None), and the call's index in the backend's life.
ScriptFn = Callable[[str, Any, int], str]

_SCRIPTS: dict[str, ScriptFn] = {}
_SCRIPTS_LOCK = __import__("threading").Lock()


def _default_script(text: str, schema: Any, call: int) -> str:
    return "scripted backend: no script chosen (harness.testing.scripted_replies)"


_SCRIPTS["default"] = _default_script


@dataclass
class ScriptedParams:
    """The ``scripted`` model backend (:func:`scripted_replies`)."""

    script: str = param("default", help="the name of a reply script a test registered with "
                                        "harness.testing.scripted_replies (default: one fixed unusable reply)")


class ScriptedBackend:
    """A model backend whose replies the test chooses (inspect_ai's ``mockllm``): each
    conversation's reply is ``script(text, schema, call_index)`` of the script named by
    ``script=``. Knows no suite: the suite's prompt adapter builds the conversation and reads
    the reply, as with a real model. Keeps each conversation it was sent (``self.sent``)."""

    def __init__(self, model: str, script: str = "default", *, max_new_tokens: int = 256, json_schema: bool = False):
        self.model, self.script = model, script
        self.max_new_tokens, self.json_schema = int(max_new_tokens), bool(json_schema)
        self.calls = 0
        self.sent: list[str] = []
        if script not in _SCRIPTS:
            raise ValueError(f"no reply script named {script!r} (register one with harness.testing.scripted_replies)")

    def identity(self) -> Mapping[str, Any]:
        return {"backend": "scripted", "model": self.model, "script": self.script}

    def generate(self, conversations: Sequence[Any], schema: Mapping[str, Any] | None = None) -> list[str]:
        fn = _SCRIPTS.get(self.script)
        if fn is None:
            raise RuntimeError(f"the reply script {self.script!r} is no longer registered")
        out = []
        for conversation in conversations:
            text = conversation_text(conversation)
            self.sent.append(text)
            out.append(str(fn(text, schema, self.calls)))
            self.calls += 1
        return out


def conversation_text(conversation: Sequence[Mapping[str, Any]]) -> str:
    """The text parts of a conversation (processor convention), joined with newlines."""
    parts: list[str] = []
    for message in conversation:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
            continue
        for part in content or ():
            if isinstance(part, Mapping) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
    return "\n".join(parts)


def make_scripted(model: str, params: Any, *, max_new_tokens: int, json_schema: bool, hash_weights: bool) -> ScriptedBackend:
    """The ``scripted`` backend plugin's factory (``planner=vlm backend=scripted script=NAME``)."""
    return ScriptedBackend(model, params.script, max_new_tokens=max_new_tokens, json_schema=json_schema)


def scripted_replies(replies: ScriptFn | Sequence[str] | str, name: str = "test") -> Any:
    """Register a reply script for ``planner=vlm backend=scripted script=<name>`` while the
    ``with`` block runs. ``replies``: a function ``(conversation text, schema, call index) ->
    reply`` (make it a function of the text, so that runs repeat whatever the schedule), a list
    of replies taken in turn, or one reply for every call."""
    import contextlib

    if isinstance(replies, str):
        fn: ScriptFn = lambda text, schema, call, r=replies: r  # noqa: E731
    elif callable(replies):
        fn = replies
    else:
        seq = list(replies)
        if not seq:
            raise ValueError("scripted_replies needs at least one reply")
        fn = lambda text, schema, call, s=seq: s[call % len(s)]  # noqa: E731

    @contextlib.contextmanager
    def block() -> Any:
        with _SCRIPTS_LOCK:
            if name in _SCRIPTS and name != "default":
                raise ValueError(f"a reply script named {name!r} is already registered")
            _SCRIPTS[name] = fn
        try:
            yield name
        finally:
            with _SCRIPTS_LOCK:
                _SCRIPTS.pop(name, None)

    return block()


def _scripted_plugin() -> Any:
    from harness.plugins import BackendPlugin

    return BackendPlugin(name="scripted", target="harness.check.conformance:make_scripted", params=ScriptedParams,
                         summary="replies a test chooses (harness.testing.scripted_replies): prompt adapters "
                                 "through planner=vlm without a model")


SCRIPTED = _scripted_plugin()


__all__ = ["AGENT_CHECKS", "SUITE_CHECKS", "ConformanceError", "Report", "ScriptedBackend", "check_agent", "check_suite",
           "conversation_text", "scripted_replies"]
