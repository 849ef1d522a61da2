"""The checks both checkers run (:class:`SharedChecks`): ``contract`` (episodes driven outside
the runner, every return of the env and the agent checked), ``determinism``, ``schedule`` and
``identity`` (each declared parameter varied, :func:`harness.params.fields_of`). What each
checks: :mod:`harness.check.conformance`."""

from __future__ import annotations

import dataclasses
import json
import math
import uuid
from typing import Any, Mapping

from harness.check.checker import Checker, Skip, first_line
from harness.check.diffs import first_difference, plain_action, short, without_privileged
from harness.check.probe import Jitter, close_env
from harness.check.verdict import ConformanceError
from harness.interfaces import AgentReply, AgentRequest, InvalidOutput
from harness.metric_declaration import not_delivered
from harness.params import Composite, Field, ParamError, convert, fields_of
from harness.run.runner import run_id_of, run_identity
from harness.scoring.policy import suite_scoring
from harness.types import (
    INFO_ACTION_OK,
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
    EpisodeSpec,
)


class SharedChecks(Checker):
    """The suite's and the agent's common checks, on top of :class:`~harness.check.checker.Checker`."""

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
            close_env(env)

    def play(self, env: Any, episode: EpisodeSpec, agent: Any, limit: int) -> list[Any]:
        """One episode on ``env`` driven by ``agent`` outside the runner, every return
        checked; the trace (observations, rewards, flags, infos) for determinism checks."""
        c = "contract"
        privileged = bool(getattr(agent, "privileged", False))
        options = {"episode": episode, "privileged": privileged, "render": bool(getattr(agent, "reads_images", True)),
                   "artifacts_dir": None}
        out = env.reset(seed=episode.seed, options=options)
        if not isinstance(out, tuple) or len(out) != 2:
            raise self.fail(c, f"reset() must return (observation, info), got {short(out)}")
        obs, info = out
        self.check_info(info, "reset", privileged, done=False)
        watch = self.watch(env, episode)
        self.watched(c, watch.reset(obs, info))
        trace: list[Any] = [("reset", obs, without_privileged(info))]
        agent.reset(episode)
        history: list[tuple[Any, str]] = []
        stepped = 0
        replan = getattr(agent, "replan_steps", None)
        for _call in range(limit + 2):
            plans = agent.act([AgentRequest(episode, obs, info, tuple(history))])
            if not isinstance(plans, (list, tuple)) or len(plans) != 1:
                raise self.fail(c, f"act() must return one plan per request, got {short(plans)} for 1")
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
                    raise self.fail(c, f"step() reward must be a finite number, got {short(reward)}")
                for flag, value in (("terminated", terminated), ("truncated", truncated)):
                    if not isinstance(value, bool):
                        raise self.fail(c, f"step() {flag} must be a bool, got {short(value)}")
                done = terminated or truncated
                self.check_info(info, "step", privileged, done=done)
                self.watched(c, watch.step(action, obs, terminated, truncated, info))
                trace.append(("step", plain_action(action), obs, float(reward), terminated, truncated,
                              without_privileged(info)))
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
                raise self.fail(c, f"{where}() info[{key!r}] must be {types[0].__name__}, got {short(value)}")
        optional = {INFO_FEEDBACK: (str,), INFO_EXPERT_LENGTH: (int, type(None)), INFO_TASK_TYPE: (str, type(None)),
                    INFO_TERMINATION: (str, type(None))}
        for key, types in optional.items():
            if key in info and not isinstance(info[key], types):
                raise self.fail(c, f"{where}() info[{key!r}] must be {' or '.join(t.__name__ for t in types)}, "
                                   f"got {short(info[key])}")
        values = info.get(INFO_VALUES, {})
        if not isinstance(values, dict) or not all(
                isinstance(k, str) and (v is None or isinstance(v, (int, float))) for k, v in values.items()):
            raise self.fail(c, f"{where}() info[{INFO_VALUES!r}] must map names to numbers or None, got {short(values)}")
        undelivered = not_delivered(self.suite.name, suite_scoring(self.suite.name)[0], values)
        if undelivered:
            raise self.fail(c, f"{where}() info[{INFO_VALUES!r}]: {undelivered[0][1]}")
        if info[INFO_GC_SATISFIED] < 0 or info[INFO_GC_TOTAL] < 0 or info[INFO_INVALID_ACTIONS] < 0:
            raise self.fail(c, f"{where}() info counts must be >= 0")
        if INFO_PRIVILEGED in info and not privileged:
            raise self.fail(c, f"{where}() info holds {INFO_PRIVILEGED!r} although privileged=False")
        if privileged and where == "reset" and INFO_PRIVILEGED not in info:
            raise self.fail(c, f"reset(options={{'privileged': True}}) info lacks {INFO_PRIVILEGED!r}")

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
            close_env(env_a)
            close_env(env_b)
        # Gymnasium's check_reset_seed_determinism: one env reset twice with the same seed.
        for what, other, rule in (
                ("a fresh env", fresh, "not deterministic (two envs reset with the same seed must give the "
                                       "same episode)"),
                ("the same env after another episode", again, "state leaks between episodes"),
                ("the same env, reset again at once with the same seed", twice,
                 "not deterministic (a second reset with the same seed must give the same episode, as "
                 "Gymnasium's check_reset_seed_determinism asks)")):
            where = first_difference(a, other)
            if where is not None:
                raise self.fail(c, f"episode {first.episode_id} seed {first.seed} twice on {what}: {where}; {rule}")
        self.same_records(c, "a second run", self.records(pipeline=False, batch_size=max(2, self.n))[:2], self.base())

    # -- schedule ---------------------------------------------------------------------
    def check_schedule(self) -> None:
        c = "schedule"
        base = self.base()
        got = self.records(agent=Jitter(self.make_agent()), pipeline=True, batch_wait_s=0.0,
                           batch_size=max(2, self.n))
        self.same_records(c, "pipelined vs lockstep (local executor)", got[:2], base)
        try:
            got = self.records(agent=Jitter(self.make_agent()), pipeline=True, batch_wait_s=0.0,
                               executor="process", num_workers=2, batch_size=max(2, self.n))
        except Skip as skip:
            self.report.skipped.append(f"schedule on the process executor: {skip}")
            return
        self.same_records(c, "process executor vs local", got[:2], base)

    # -- identity ---------------------------------------------------------------------
    def check_identity(self) -> None:
        c = "identity"
        whose = self.whose
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
                self.report.skipped.append(f"identity: {f.name}={short(new)} did not build "
                                           f"({type(exc).__name__}: {first_line(exc)})")
                continue
            suite_obj, agent_obj = (obj, base_agent) if is_suite else (self.suite.obj, obj)
            try:
                other_id = run_id_of(run_identity(dataclasses.replace(
                    spec, suite_params=values if is_suite else spec.suite_params,
                    agent_params=spec.agent_params if is_suite else values), suite_obj, agent_obj))
            except Exception as exc:  # noqa: BLE001
                self.report.skipped.append(f"identity: {f.name}={short(new)}: no run identity "
                                           f"({type(exc).__name__}: {first_line(exc)})")
                continue
            change = f"{f.name} {short(current)} -> {short(new)}"
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
