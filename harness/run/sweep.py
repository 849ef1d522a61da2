"""Checkpoint sweeps (``+experiment=checkpoint_sweep``, docs/sequential.md): choose one of K
checkpoints on *selection* episodes by racing them, report the chosen one on *held-out*
episodes selection never saw.

* :func:`partition`: the split's selection / held-out parts, a seeded rule fixed before any
  outcome (the episodes ranked by ``sha256("<seed>/<episode id>")``; the first
  ``floor(selection * N)`` are the selection part, in that order, the rest are held out). The
  rule, its version, the seed, the fraction and the part enter each run's identity through
  :class:`PartSuite` (the suite's ``protocol`` gains a ``partition`` entry).
* :func:`replay`: the race of :func:`harness.stats.sequential.race`, replayed on stored records
  (round by round, every pair of surviving checkpoints tested at ``alpha / (K - 1)``, a
  checkpoint dropped once a surviving one is decided better); nothing but the records holds
  its state, so a killed sweep resumes where it stood.
* :mod:`harness.tables.sweeps`: what ``harness table`` and ``harness report`` print
  of a stored sweep.

The core names no suite: the checkpoints are whatever the sweep's ``param`` override takes.
"""

from __future__ import annotations

import glob as _glob
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from harness.run import servers
from harness.scoring.policy import columns, episode_values
from harness.stats.sequential.betting import BETTING_RULES, DEFAULT_RULE, RULE_VERSION, first_crossing, rescale
from harness.stats.sequential.racing import eliminate
from harness.stats.sequential.stopping import ORDER_KEY
from harness.stats.sequential.order import ORDER_RULE, ORDER_VERSION, episode_ids, ranked

#: ``stopping.baseline`` of a sweep's selection runs: every checkpoint is raced against every
#: other (no single baseline); ``stopping=sequential`` comparisons skip such runs.
RACE = "(race)"
#: The partition rule and its version (both in the run identity).
PARTITION_RULE = ORDER_RULE
PARTITION_VERSION = ORDER_VERSION
#: The parts of a split.
SELECTION, HELD_OUT = "selection", "held-out"
#: A held-out run's variant name is the chosen checkpoint's name with this suffix (its own
#: table row; the same episodes' selection estimates stay in the checkpoint's row).
HELD_OUT_SUFFIX = "@held-out"
_KEYS = ("checkpoints", "param", "overrides", "selection", "partition_seed", "alpha", "rule", "metric", "round",
         "max_episodes", "serve")
#: Keys of ``experiment.sweep.serve``: the command template each checkpoint's server starts with
#: (harness.run.servers), the URL every checkpoint's server answers on (one at a time), the timeouts.
_SERVE_KEYS = ("command", "url", "ready_timeout_s", "stop_timeout_s")


class SweepError(ValueError):
    """A bad sweep setting; ``str()`` is one line (:func:`harness.tables.experiments.load` gives it
    as an ExperimentError)."""


def step_of(name: str) -> int | None:
    """The training step a checkpoint's name carries: its last run of digits (``step-1200``,
    ``checkpoint_1200.pt``: 1200); None without one."""
    found = re.findall(r"\d+", name)
    return int(found[-1]) if found else None


def checkpoint_name(path: str) -> str:
    """A checkpoint's row name: its file or folder name (``ckpts/step-1200/`` -> ``step-1200``)."""
    return os.path.basename(os.path.normpath(path)) or path


def expand(checkpoints: object) -> list[str]:
    """The checkpoints of a sweep: a list of paths, or a glob (a string; ``ckpts/step-*``),
    sorted by training step (then name). SweepError when none or two share a name."""
    if isinstance(checkpoints, str):
        paths = sorted(_glob.glob(os.path.expanduser(checkpoints)))
        if not paths:
            raise SweepError(f"experiment.sweep.checkpoints: no checkpoint matches {checkpoints!r}")
    elif isinstance(checkpoints, (list, tuple)) and checkpoints and all(isinstance(c, str) for c in checkpoints):
        paths = [os.path.expanduser(c) for c in checkpoints]
    else:
        raise SweepError("experiment.sweep.checkpoints must be a glob (ckpts/step-*) or a list of checkpoints, "
                         f"got {checkpoints!r}")
    names = [checkpoint_name(p) for p in paths]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SweepError(f"experiment.sweep.checkpoints: two checkpoints are named {twice[0]!r} (a row each needs "
                         "its own name)")
    return sorted(paths, key=lambda p: (step_of(checkpoint_name(p)) is None, step_of(checkpoint_name(p)) or 0,
                                        checkpoint_name(p)))


@dataclass(frozen=True)
class SweepSettings:
    """``experiment.sweep`` (configs/experiment/checkpoint_sweep.yaml)."""

    checkpoints: tuple[str, ...]
    #: The override each checkpoint's path is given to (``variant.params.model``, ``variant.params.adapter``);
    #: None with ``serve`` (the path reaches the agent through ``{checkpoint}`` / ``{checkpoint_id}``).
    param: str | None = "variant.params.model"
    #: Overrides every checkpoint's run shares (``variant=base``: the agent the checkpoints load into).
    overrides: tuple[str, ...] = ()
    #: The fraction of the split used for selection; the rest is held out.
    selection: float = 0.5
    partition_seed: int = 0
    alpha: float = 0.05
    rule: str = DEFAULT_RULE
    metric: str | None = None
    #: Selection episodes each surviving checkpoint takes per round.
    round: int = 10
    #: Stop the race after this many selection episodes (None: the selection part's end).
    max_episodes: int | None = None
    #: ``experiment.sweep.serve`` (command, url, timeouts), or None: the checkpoints load in-process.
    serve: Mapping[str, Any] | None = None

    @property
    def names(self) -> list[str]:
        return [checkpoint_name(p) for p in self.checkpoints]

    def stopping(self, metric: str) -> dict[str, Any]:
        """The selection runs' ``stopping`` entry (its identity keys hashed by the runner)."""
        return {"baseline": RACE, "rule": self.rule, "metric": metric, "alpha": self.alpha, "margin": None,
                "max_episodes": self.max_episodes, "round": self.round, "version": RULE_VERSION}


def parse(node: Mapping[str, Any], default_name: str) -> "CheckpointSweep":
    """The sweep experiment from its ``experiment`` node (``name``, ``description``, ``sweep``)."""
    stray = sorted(set(node) - {"name", "description", "sweep"})
    if stray:
        raise SweepError(f"experiment.{stray[0]} is not a key of a checkpoint sweep (keys: name, description, sweep)")
    body = node.get("sweep")
    if not isinstance(body, dict):
        raise SweepError("experiment.sweep must hold the sweep's settings (checkpoints, param, ...)")
    unknown = sorted(set(body) - set(_KEYS))
    if unknown:
        raise SweepError(f"experiment.sweep.{unknown[0]} is not a sweep setting (settings: {', '.join(_KEYS)})")
    if body.get("checkpoints") is None:
        raise SweepError("experiment.sweep.checkpoints is required: a glob "
                         "(experiment.sweep.checkpoints='ckpts/step-*') "
                         "or a list of checkpoints")
    given = {k: v for k, v in body.items() if v is not None and k != "param"}
    given["param"] = body.get("param", SweepSettings.param)
    checkpoints = tuple(expand(given.pop("checkpoints")))
    if len(checkpoints) < 2:
        raise SweepError(f"experiment.sweep.checkpoints: a sweep chooses among 2 or more checkpoints, got "
                         f"{len(checkpoints)} ({', '.join(checkpoints)})")
    overrides = given.pop("overrides", ())
    if isinstance(overrides, str) or not all(isinstance(o, str) for o in overrides):
        raise SweepError(f"experiment.sweep.overrides must be a list of overrides, got {overrides!r}")
    settings = SweepSettings(checkpoints, overrides=tuple(overrides), **given)
    _check(settings)
    return CheckpointSweep(str(node.get("name") or default_name), str(node.get("description") or ""), settings)


def _check(s: SweepSettings) -> None:
    def number(key: str, ok: bool, what: str) -> None:
        value = getattr(s, key)
        if isinstance(value, bool) or not ok:
            raise SweepError(f"experiment.sweep.{key} must be {what}, got {value!r}")

    number("selection", isinstance(s.selection, (int, float)) and 0 < s.selection < 1, "in (0, 1)")
    number("alpha", isinstance(s.alpha, (int, float)) and 0 < s.alpha < 1, "in (0, 1)")
    number("partition_seed", isinstance(s.partition_seed, int), "an integer")
    number("round", isinstance(s.round, int) and s.round >= 1, "an integer >= 1")
    number("max_episodes", s.max_episodes is None or (isinstance(s.max_episodes, int) and s.max_episodes >= 1),
           "an integer >= 1 or null")
    if s.rule not in BETTING_RULES:
        raise SweepError(f"experiment.sweep.rule must be one of {', '.join(BETTING_RULES)} (a race is open-ended), "
                         f"got {s.rule!r}")
    if s.param is None and not (s.serve and s.serve.get("url")):
        raise SweepError("experiment.sweep.param is null and no experiment.sweep.serve.url is set: the checkpoints "
                         "would reach no agent")
    if s.param is not None and (not isinstance(s.param, str) or "=" in s.param or not s.param):
        raise SweepError(f"experiment.sweep.param must name the override a checkpoint is given to "
                         f"(variant.params.model), got {s.param!r}")
    if s.serve is not None:
        if not isinstance(s.serve, Mapping) or set(s.serve) - set(_SERVE_KEYS) or not s.serve.get("url"):
            raise SweepError(f"experiment.sweep.serve takes {', '.join(_SERVE_KEYS)} (url required), got {s.serve!r}")


def _quoted(value: str) -> str:
    """A path as a Hydra override value (quoted when it holds characters the grammar reads)."""
    if re.fullmatch(r"[\w./~+-]+", value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass(frozen=True)
class _Served:
    """A served checkpoint's run as :class:`harness.run.servers.Lifecycle` reads a variant."""

    name: str
    serve: Any


@dataclass(frozen=True)
class CheckpointSweep:
    """A sweep experiment: one selection run per checkpoint (``harness run +experiment=...``
    composes and checks them like any experiment's runs; harness/cli/run_sweep.py races
    them and runs the chosen one on the held-out part)."""

    name: str
    description: str
    settings: SweepSettings

    @property
    def serve(self) -> Any:
        """The servers' settings (harness.run.servers.ServeSettings: the harness starts each
        checkpoint's server while it runs, one at a time), or None."""
        node = self.settings.serve
        if not node:
            return None
        try:
            return servers.parse_settings({k: v for k, v in node.items() if k != "url"})
        except servers.ServeError as exc:
            raise SweepError(str(exc).replace("experiment.serve", "experiment.sweep.serve")) from None

    @property
    def variants(self) -> tuple[Any, ...]:
        """Each checkpoint as a served variant (its selection run and its held-out run), for
        :class:`harness.run.servers.Lifecycle`; () without ``serve``."""
        if not self.settings.serve:
            return ()
        url = self.settings.serve["url"]
        return tuple(_Served(name + suffix, servers.VariantServe(url=url, checkpoint=path))
                     for path, name in zip(self.settings.checkpoints, self.settings.names)
                     for suffix in ("", HELD_OUT_SUFFIX))

    def table(self, *_args: Any, **_kw: Any) -> Any:
        raise SweepError(f"experiment {self.name} is a checkpoint sweep: `harness table OUT` (without --experiment) "
                         "prints its runs and how the race chose")

    def jobs(self, overrides: Sequence[str] = ()) -> list[list[str]]:
        s = self.settings
        out = []
        for path, name in zip(s.checkpoints, s.names):
            mine = list(s.overrides)
            if s.serve:  # its server's {url}, {checkpoint}, {checkpoint_id} ... filled in
                try:
                    vals = servers.values(name, servers.VariantServe(url=s.serve["url"], checkpoint=path))
                except servers.ServeError as exc:
                    raise SweepError(str(exc)) from None
                mine = servers.fill(mine, vals)
            if s.param is not None:
                mine.append(f"++{s.param}={_quoted(os.path.abspath(path))}")
            out.append([*mine, f"variant.name={name}", *overrides])
        return out


# --- the partition ------------------------------------------------------------------------

def partition(episode_ids: Sequence[str], selection: float, seed: int) -> tuple[list[int], list[int]]:
    """(selection, held-out) positions in the split: the episodes ranked by
    ``sha256("<seed>/<episode id>")``, the first ``floor(selection * N)`` (at least 1, at most
    N - 1) selected in that order, the rest held out in that order. Depends on the ids and the
    seed only (not on the split's order, nor on any outcome)."""
    n = len(episode_ids)
    if n < 2:
        raise SweepError(f"a sweep needs a split of 2 or more episodes to hold some out, got {n}")
    order = ranked(episode_ids, seed)
    k = min(n - 1, max(1, int(math.floor(selection * n))))
    return order[:k], order[k:]


class PartSuite:
    """A suite whose split ``split`` is one part of a sweep's partition: its episodes are the
    part's, in the part's order, and its ``protocol`` adds the partition (so it enters the run
    identity); everything else is the suite's own."""

    def __init__(self, suite: Any, split: str, part: str, selection: float, seed: int) -> None:
        self._suite, self._split, self.part = suite, split, part
        episodes = suite.episodes(split)
        chosen, held = partition(episode_ids(episodes), selection, seed)
        self._positions = chosen if part == SELECTION else held
        self._episodes = [episodes[i] for i in self._positions]
        self.partition = {"rule": PARTITION_RULE, "version": PARTITION_VERSION, "seed": seed,
                          "selection": selection, "split_episodes": len(episodes), "part": part,
                          "episodes": len(self._episodes)}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._suite, name)

    def episodes(self, split: str) -> Any:
        return self._episodes if split == self._split else self._suite.episodes(split)

    def split_total(self, split: str) -> int:
        if split == self._split:
            return len(self._episodes)
        total = getattr(self._suite, "split_total", None)
        return int(total(split)) if callable(total) else len(self._suite.episodes(split))

    def protocol(self, split: str) -> Mapping[str, Any]:
        proto = dict(self._suite.protocol(split))
        if split == self._split:
            proto["partition"] = dict(self.partition)
        return proto


# --- the race, replayed on stored records -------------------------------------------------

def ordered_values(rows: Sequence[Mapping[str, Any]], metric: Any, values_fn: Any = None) -> np.ndarray:
    """One run's per-episode values of ``metric`` in its part's order (the records'
    ``extra.episode_index``), the longest prefix without a gap; NaN where an episode does not
    count (harness.scoring.policy.columns: the one error policy)."""
    nums, _den = columns(metric, [episode_values(r, values_fn) for r in rows])
    by_index: dict[int, float] = {}
    for r, x in zip(rows, nums):
        extra = r.get("extra") if isinstance(r.get("extra"), dict) else {}
        if isinstance(extra.get(ORDER_KEY), int):
            by_index[extra[ORDER_KEY]] = x
    out = []
    while len(out) in by_index:
        out.append(by_index[len(out)])
    return np.asarray(out, dtype=float)


@dataclass
class Drop:
    """Why a checkpoint left the race."""

    #: Selection episodes it ran (the end of the round it was dropped in).
    after: int
    #: The surviving checkpoint decided better than it, and the episode where that was decided.
    by: str
    decided_at: int


@dataclass
class RaceState:
    """The race after the rounds so far (recomputed from records; nothing else is kept)."""

    names: list[str]
    alpha: float
    #: Round ends looked at so far (the last: selection episodes the survivors ran).
    n: int
    dropped: dict[str, Drop] = field(default_factory=dict)
    #: The survivor with the highest mean over the selection episodes (ties: the earliest step).
    chosen: str | None = None

    @property
    def alive(self) -> list[str]:
        return [n for n in self.names if n not in self.dropped]

    def used(self, name: str) -> int:
        return self.dropped[name].after if name in self.dropped else self.n


def _crossing(a: np.ndarray, b: np.ndarray, level: float, width: float, sign: float, rule: str) -> tuple[int, int]:
    """(episode at which the two-sided test of ``b - a`` first decided, +1 if b better / -1 if
    worse); (0, 0) if never. Pairs without a value on a side are left out."""
    m = min(len(a), len(b))
    d = sign * (b[:m] - a[:m])
    kept = np.flatnonzero(~np.isnan(d))
    if not len(kept):
        return 0, 0
    when, side = first_crossing(rescale(d[kept], width)[None, :], level, rule=rule)
    if not when[0]:
        return 0, 0
    return int(kept[when[0] - 1]) + 1, int(side[0])


def replay(values: Mapping[str, np.ndarray], names: Sequence[str], *, alpha: float, step: int, upto: int,
           width: float = 1.0, higher_is_better: bool = True, rule: str = DEFAULT_RULE) -> RaceState:
    """The race over rounds of ``step`` selection episodes up to ``upto``, by the rule of
    :func:`harness.stats.sequential.race` (:func:`harness.stats.sequential.racing.eliminate`):
    after each round, every pair of surviving checkpoints is tested at ``alpha / (K - 1)`` on
    their paired values so far, and a checkpoint is dropped once a surviving one is decided
    better; the race ends when one is left. ``values``: each checkpoint's per-episode values
    in selection order (those it ran)."""
    names = list(names)
    k = len(names)
    level = alpha / max(1, k - 1)
    sign = 1.0 if higher_is_better else -1.0
    # first[0, i, j]: the episode at which j was decided better than i (0: never); each pair is
    # tested as (the name first in text order, the other)
    first = np.zeros((1, k, k), dtype=int)
    for i in range(k):
        for j in range(i + 1, k):
            a, b = (i, j) if names[i] < names[j] else (j, i)
            when, side = _crossing(values[names[a]], values[names[b]], level, width, sign, rule)
            if when and side > 0:
                first[0, a, b] = when  # b better than a
            elif when:
                first[0, b, a] = when

    def scores(ends: np.ndarray) -> np.ndarray:
        return np.array([[_mean(values[n], int(ends[0]), sign) for n in names]])

    out = eliminate(first, scores, step=step, upto=upto, to_the_end=False,
                    order=np.argsort(np.argsort(names, kind="stable"), kind="stable"))
    state = RaceState(names, alpha, int(out.ended[0]))
    drops = sorted((int(out.used[0, i]), i) for i in range(k) if out.dropped[0, i])  # by round, then step
    for after, i in drops:
        state.dropped[names[i]] = Drop(after, names[int(out.by[0, i])], int(out.decided_at[0, i]))
    state.chosen = names[int(out.chosen[0])] if state.alive and state.n else None
    return state


def _mean(x: np.ndarray, n: int, sign: float) -> float:
    """A checkpoint's signed mean over its first ``n`` values (-inf where it has none)."""
    x = x[:n]
    x = x[~np.isnan(x)]
    return sign * float(x.mean()) if len(x) else -math.inf
