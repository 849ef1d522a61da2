"""The suite's checker (:class:`SuiteChecker`): the shared checks and the suite's own ``probe``,
a probe agent driving the env with what agents really send (invalid strings, unusable output,
no-ops, random valid actions). What it checks: :mod:`harness.check.conformance`."""

from __future__ import annotations

import json
import uuid
from typing import Any, Mapping, Sequence

import numpy as np

from harness.check.checker import error_rule, first_line
from harness.check.diffs import first_difference, plain_action, short, without_privileged
from harness.check.probe import ProbeAgent, close_env, probe_mix, probe_sequences
from harness.check.shared_checks import SharedChecks
from harness.interfaces import AgentContractError, InvalidOutput
from harness.registry.catalog import SUITES
from harness.scoring.failures import GENERIC, classify, declaration_problem, declared_classes, rules_for
from harness.scoring.policy import suite_scoring
from harness.spaces import is_answer_space
from harness.types import INFO_ACTION_OK, INFO_INVALID_ACTIONS, INFO_SUCCESS, INFO_VALUES, EpisodeSpec


class SuiteChecker(SharedChecks):
    """``check_suite``'s checks: contract, probe, determinism, schedule, identity (of the suite)."""

    whose = "suite"

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
                close_env(env)
        pool: list[Any] = []
        seen: set[str] = set()
        for action in self.valid_seen:
            key = json.dumps(plain_action(action), sort_keys=True, default=str)
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
            close_env(env)

        # 2. Step limits: whatever the agent sends, the episode ends in time.
        sequences = probe_sequences(pool, text, limit)
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
            close_env(env)

        # 3. No state leaks between episodes: an episode replays the same after others.
        first = episodes[0]
        mixed = probe_mix(pool, text, limit)
        env_a, env_b = suite.make_env(), suite.make_env()
        try:
            a, _ = self.replay(env_a, first, mixed(first), limit + 1)
            for other in episodes[1:] or episodes:
                self.replay(env_a, other, mixed(other), limit + 1)
            again, _ = self.replay(env_a, first, mixed(first), limit + 1)
            fresh, _ = self.replay(env_b, first, mixed(first), limit + 1)
        finally:
            close_env(env_a)
            close_env(env_b)
        if first_difference(a, fresh) is None and first_difference(a, again) is not None:
            # A difference on the reused env alone may still be chance: two more fresh envs tell.
            for _ in range(2):
                env_c = suite.make_env()
                try:
                    fresh, _ = self.replay(env_c, first, mixed(first), limit + 1)
                finally:
                    close_env(env_c)
                if first_difference(a, fresh) is not None:
                    break
        where = first_difference(a, fresh)
        if where is not None:  # two fresh envs, the same seed and actions: not deterministic
            raise self.fail(c, f"episode {first.episode_id} seed {first.seed} driven by the probe (invalid, unusable "
                               f"and random valid actions) on two fresh envs: {where}; not deterministic (a reset "
                               "with the same seed and the same actions must give the same episode)")
        where = first_difference(a, again)
        if where is not None:
            raise self.fail(c, f"episode {first.episode_id} driven by the probe (invalid, unusable and random "
                               f"valid actions) on the same env after other episodes: {where}; state leaks "
                               "between episodes")

        # 4. Through the runner: no error record, every class declared.
        if text:
            agent = ProbeAgent(pool, limit, [e.key for e in episodes])
            records, _, _ = self.records(agent=agent, pipeline=False, batch_size=max(2, self.n))
            self.probe_records(records)

    def probe_declaration(self) -> None:
        if not self.suite.registered:
            return
        problem = declaration_problem(tuple(getattr(SUITES.entry(self.suite.name), "failure_classes", ()) or ()))
        if problem is not None:
            raise self.fail("probe", problem)

    def probe_records(self, records: Mapping[Any, Mapping[str, Any]]) -> None:
        c = "probe"
        rules = rules_for(self.suite.name) if self.suite.registered else None
        declared = ({f.name for f in declared_classes(self.suite.name)} if self.suite.registered else set(GENERIC))
        for key, row in records.items():
            if row["error_kind"] is not None:
                raise self.fail(c, f"episode {key[2]} driven by the probe (invalid, unusable and random valid "
                                   f"actions) {error_rule(self.suite.name, row)}")
            cls = classify(row, rules=rules) if rules is not None else classify(row)
            if cls not in declared:
                raise self.fail(c, f"episode {key[2]} is classed {cls!r}, a failure class the suite does not declare "
                                   "(SuitePlugin.failure_classes)")

    def probe_invalid(self, env: Any, episode: EpisodeSpec, text: bool, pool: list[Any]) -> None:
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
                    raise self.fail(c, f"step({short(bad)}) raised {type(exc).__name__}: {first_line(exc)} "
                                       "(an invalid action is counted, not raised)") from None
                info = step[4]
                if answers and type(bad) is str and bad:
                    continue  # a free-text answer: any non-empty text may be a valid one
                if answers and info.get(INFO_ACTION_OK) is not False:
                    self.probe_scored_as_unusable(episode, bad, info)
                    continue
                if info.get(INFO_ACTION_OK) is not False:
                    raise self.fail(c, f"episode {episode.episode_id}: the unknown action {short(bad)} was accepted "
                                       "as valid (action_ok must be False)")
                if type(bad) is InvalidOutput and bad.costs_step:
                    continue
                after = int(info.get(INFO_INVALID_ACTIONS, 0))
                if after != before + 1:
                    how = "was not counted" if after == before else f"was counted {after - before} times"
                    raise self.fail(c, f"episode {episode.episode_id}: the unknown action {short(bad)} {how} "
                                       f"(invalid_actions {before} -> {after}; one invalid action is counted once)")
            return
        if not pool:
            self.report.skipped.append("probe: no valid action seen to shape invalid ones")
            return
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
        what = f"episode {episode.episode_id}: the {'empty' if bad == '' else 'unusable'} answer {short(bad)}"
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
        trace: list[Any] = [("reset", obs, without_privileged(info))]
        for action in list(actions)[:limit]:
            obs, reward, terminated, truncated, info = env.step(action)
            self.watched("probe", watch.step(action, obs, terminated, truncated, info), info)
            trace.append(("step", plain_action(action), obs, float(reward), terminated, truncated,
                          without_privileged(info)))
            if terminated or truncated:
                self.watched("probe", watch.after_end(env, action))
                return trace, True
        return trace, False
