"""The episode invariants every suite keeps, as the conformance checker
(:mod:`harness.check.conformance`) watches them on every episode it drives outside the runner.

Gymnasium's ``check_env`` (gymnasium/utils/env_checker.py) checks that observations are in the
declared ``observation_space``; :class:`EpisodeWatch` does that (and checks the actions the env
judged valid against ``action_space``, :func:`harness.spaces.action_outside`) and adds the
harness's episode facts (:mod:`harness.types` ``INFO_*``):

* ``0 <= gc_satisfied <= gc_total``, with ``gc_total`` the same at reset and every step;
* ``expert_length`` >= 0 where known;
* ``success`` only on a step that ends the episode (terminated or truncated): a success the
  episode goes on after is not one the record can keep -- unless the suite declares
  ``success_at_stop = True`` (ALFRED: reaching the goal does not end the episode; success is
  read when the agent stops);
* ``invalid_actions`` never falls and rises by at most one per step (one invalid action is
  counted once; a step the env took but could not carry out may count too, as EB-Manipulation's
  failed motions do, ``action_ok`` staying True);
* a step after the episode ended is refused (it raises) or leaves the record's facts unchanged.
"""

from __future__ import annotations

from typing import Any, Mapping

from harness.interfaces import InvalidOutput
from harness.spaces import action_outside, declared, outside
from harness.types import (
    INFO_ACTION_OK,
    INFO_EXPERT_LENGTH,
    INFO_GC_SATISFIED,
    INFO_GC_TOTAL,
    INFO_INVALID_ACTIONS,
    INFO_SUCCESS,
    INFO_TERMINATION,
    INFO_VALUES,
)

#: The info keys a record is built from: a step after the end must leave them as they were.
RECORD_KEYS = (INFO_SUCCESS, INFO_GC_SATISFIED, INFO_GC_TOTAL, INFO_INVALID_ACTIONS, INFO_EXPERT_LENGTH,
               INFO_TERMINATION, INFO_VALUES)


class EpisodeWatch:
    """Follows one episode on ``env``: :meth:`reset`, then :meth:`step` per step; each returns
    the first rule broken (one line), or None."""

    def __init__(self, env: Any, episode_id: str, success_at_stop: bool = False):
        self.episode_id, self.success_at_stop = episode_id, bool(success_at_stop)
        obs_space, act_space = getattr(env, "observation_space", None), getattr(env, "action_space", None)
        self.obs_space = obs_space if declared(obs_space) else None
        self.act_space = act_space if declared(act_space) else None
        self.steps = 0
        self.gc_total: Any = None
        self.invalid = 0
        self.last: Mapping[str, Any] = {}

    def _where(self) -> str:
        return f"episode {self.episode_id} {'reset' if self.steps == 0 else f'step {self.steps}'}"

    def reset(self, obs: Any, info: Mapping[str, Any]) -> str | None:
        self.steps = 0
        self.gc_total = info.get(INFO_GC_TOTAL)
        self.invalid = int(info.get(INFO_INVALID_ACTIONS, 0) or 0)
        self.last = dict(info)
        return self._observation(obs) or self._facts(info)

    def step(self, action: Any, obs: Any, terminated: bool, truncated: bool, info: Mapping[str, Any]) -> str | None:
        self.steps += 1
        where = self._where()
        problem = self._observation(obs) or self._facts(info)
        if problem:
            return problem
        ok = info.get(INFO_ACTION_OK)
        if ok is True and self.act_space is not None and type(action) is not InvalidOutput:
            out = action_outside(self.act_space, action)
            if out is not None:
                return f"{where}: an action the env took as valid is outside its declared action_space: {out}"
        if info.get(INFO_SUCCESS) is True and not (terminated or truncated or self.success_at_stop):
            return (f"{where}: success reported on a step that does not end the episode (success only on "
                    "the terminal step)")
        invalid = int(info.get(INFO_INVALID_ACTIONS, 0) or 0)
        rise, self.invalid = invalid - self.invalid, invalid
        if rise < 0 or rise > 1:
            return (f"{where}: invalid_actions went {invalid - rise} -> {invalid} on a step with action_ok={ok!r} "
                    "(one invalid action is counted once, on its own step)")
        self.last = dict(info)
        return None

    def after_end(self, env: Any, action: Any) -> str | None:
        """One more step after the episode ended: refused (it raises), or the record's facts
        unchanged."""
        try:
            out = env.step(action)
            info = out[4]
        except Exception:  # noqa: BLE001 - refusing a step after the end is the other right answer
            return None
        if not isinstance(info, Mapping):
            return None
        changed = [k for k in RECORD_KEYS if k in self.last and info.get(k) != self.last.get(k)]
        if changed:
            k = changed[0]
            return (f"episode {self.episode_id}: a step after the episode ended was accepted and changed {k} "
                    f"({self.last.get(k)!r} -> {info.get(k)!r}); refuse it (raise) or leave the record unchanged")
        return None

    def _observation(self, obs: Any) -> str | None:
        if self.obs_space is None:
            return None
        where = outside(self.obs_space, obs, "observation")
        return None if where is None else (f"{self._where()}: the observation is outside the declared "
                                           f"observation_space: {where}")

    def _facts(self, info: Mapping[str, Any]) -> str | None:
        where = self._where()
        s, total = info.get(INFO_GC_SATISFIED), info.get(INFO_GC_TOTAL)
        if isinstance(s, int) and isinstance(total, int) and not 0 <= s <= total:
            return f"{where}: gc_satisfied {s} outside 0 .. gc_total {total}"
        if total != self.gc_total:
            return f"{where}: gc_total changed within the episode ({self.gc_total!r} -> {total!r})"
        length = info.get(INFO_EXPERT_LENGTH)
        if length is not None and (not isinstance(length, (int, float)) or length < 0):
            return f"{where}: expert_length {length!r} is below 0"
        return None
