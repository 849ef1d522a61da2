"""Stored checkpoint sweeps (``+experiment=checkpoint_sweep``, :mod:`harness.run.sweep`):
what ``harness table`` and ``harness report`` print of them -- which checkpoint was dropped
after how many selection episodes, the chosen one, its held-out value and interval, and the
metric against training step -- recomputed from the records (the race replayed with
:func:`harness.run.sweep.replay`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from harness.scoring.policy import columns, episode_values, suite_scoring
from harness.run.sweep import HELD_OUT, HELD_OUT_SUFFIX, RACE, Drop, ordered_values, replay, step_of
from harness.stats.sequential.betting import DEFAULT_RULE, RULE_VERSION, confidence_sequence
from harness.stats.sequential.stopping import tested_metric


# --- intervals ----------------------------------------------------------------------------

def wilson(successes: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score 95 % interval of a rate (Wilson 1927), for a held-out run of fixed size."""
    if n <= 0:
        return math.nan, math.nan
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def interval(x: np.ndarray, metric: Any, alpha: float, anytime: bool) -> tuple[float, float, float, int]:
    """(mean, lo, hi, n) of one checkpoint's values: the betting confidence sequence
    (``betting_hedged``, valid whatever the race's stopping did) when ``anytime``, else, for a
    binary metric over a fixed set of held-out episodes, the Wilson interval (a bounded score:
    the confidence sequence there too)."""
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    if not len(x):
        return math.nan, math.nan, math.nan, 0
    lo_m, hi_m = (float(v) for v in metric.range)
    mean = float(x.mean())
    if not anytime and metric.binary:
        lo, hi = wilson(float(((x - lo_m) / (hi_m - lo_m)).sum()), len(x))
    else:
        lo_s, hi_s = confidence_sequence(np.clip((x - lo_m) / (hi_m - lo_m), 0, 1), alpha, rule="betting_hedged")
        lo, hi = float(lo_s[-1]), float(hi_s[-1])
    return mean, lo_m + lo * (hi_m - lo_m), lo_m + hi * (hi_m - lo_m), len(x)


# --- stored sweeps (tables, report) -------------------------------------------------------

@dataclass
class Point:
    """One checkpoint of a stored sweep."""

    name: str
    step: int | None
    #: Selection episodes it ran, its mean there and the anytime-valid interval.
    episodes: int
    mean: float
    lo: float
    hi: float
    drop: Drop | None = None


@dataclass
class Sweep:
    """A stored checkpoint sweep: its checkpoints' race and the chosen one's held-out run."""

    suite: str
    split: str
    metric: str
    percent: bool
    rule: str
    alpha: float
    partition: dict[str, Any]
    selection_episodes: int
    points: list[Point]
    chosen: str | None
    #: The chosen checkpoint's held-out run: (mean, lo, hi, episodes run, episodes in the part), or None.
    held_out: tuple[float, float, float, int, int] | None = None
    #: The held-out interval: "wilson" (a binary metric) or "confidence_sequence" (a bounded score).
    held_out_kind: str = "wilson"

    def to_json(self) -> dict[str, Any]:
        def num(v: float | None) -> float | None:
            return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)

        held = self.held_out
        return {"suite": self.suite, "split": self.split, "metric": self.metric, "rule": self.rule,
                "version": RULE_VERSION, "alpha": self.alpha, "partition": {k: v for k, v in self.partition.items()
                                                                           if k != "part"},
                "chosen": self.chosen,
                "held_out": None if held is None else {"value": num(held[0]), "interval": [num(held[1]), num(held[2])],
                                                       "episodes": held[3], "part_episodes": held[4],
                                                       "interval_kind": self.held_out_kind},
                "checkpoints": [{"name": p.name, "step": p.step, "selection_episodes": p.episodes,
                                 "value": num(p.mean), "interval": [num(p.lo), num(p.hi)],
                                 "interval_kind": "anytime_valid",
                                 "dropped": None if p.drop is None else {"after": p.drop.after, "by": p.drop.by,
                                                                         "decided_at": p.drop.decided_at}}
                                for p in self.points]}


def _identity(r: Mapping[str, Any]) -> dict[str, Any]:
    value = r.get("identity")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def stored_sweeps(frame: Any, runs: Any) -> list[Sweep]:
    """Every checkpoint sweep among the shown runs of a store: the selection runs (identity
    ``stopping.baseline`` = :data:`RACE`, a ``partition`` in the protocol) of one suite,
    split, partition, race settings, seed and repeat, their race replayed from the records
    (with the round size the runs were started with), and the held-out run of the chosen one."""
    by_run: dict[str, list[dict]] = {}
    for row in frame.to_dict("records"):
        by_run.setdefault(row["run_id"], []).append(row)
    groups: dict[str, list[tuple[dict, dict]]] = {}
    held: dict[tuple[str, str], dict] = {}
    for r in runs.to_dict("records"):
        identity = _identity(r)
        part = (identity.get("protocol") or {}).get("partition")
        if not isinstance(part, dict) or r["run_id"] not in by_run:
            continue
        where = json.dumps([r["suite"], r["split"], {k: v for k, v in part.items() if k not in ("part", "episodes")},
                            identity.get("seed_offset", 0), identity.get("repeat", 0)], sort_keys=True)
        if part.get("part") == HELD_OUT:
            held[(where, str(r["variant"]))] = r
            continue
        stopping = identity.get("stopping") or {}
        if stopping.get("baseline") != RACE:
            continue
        groups.setdefault(where + json.dumps(stopping, sort_keys=True), []).append((r, identity))
    out = []
    for members in groups.values():
        r0, identity0 = members[0]
        stopping = identity0["stopping"]
        metrics, values_fn = suite_scoring(str(r0["suite"]))
        try:
            metric = tested_metric(metrics, stopping.get("metric"))
        except ValueError:
            continue
        partition_ = identity0["protocol"]["partition"]
        spec = r0.get("spec")
        try:
            step = int((json.loads(spec) if isinstance(spec, str) else spec or {}).get("stopping", {}).get("round", 1))
        except (TypeError, ValueError, AttributeError):
            step = 1
        members.sort(key=lambda m: (step_of(str(m[0]["variant"])) is None, step_of(str(m[0]["variant"])) or 0,
                                    str(m[0]["variant"])))
        names = [str(m[0]["variant"]) for m in members]
        values = {str(m[0]["variant"]): ordered_values(by_run[m[0]["run_id"]], metric, values_fn) for m in members}
        lo_m, hi_m = (float(v) for v in metric.range)
        upto = max((len(v) for v in values.values()), default=0)
        state = replay(values, names, alpha=float(stopping["alpha"]), step=max(1, step), upto=upto,
                       width=hi_m - lo_m, higher_is_better=metric.higher_is_better,
                       rule=str(stopping.get("rule", DEFAULT_RULE)))
        points = []
        for name in names:
            n = min(state.used(name), len(values[name]))
            mean, lo, hi, _k = interval(values[name][:n], metric, float(stopping["alpha"]), anytime=True)
            points.append(Point(name, step_of(name), n, mean, lo, hi, state.dropped.get(name)))
        held_out = None
        where = json.dumps([r0["suite"], r0["split"], {k: v for k, v in partition_.items()
                                                        if k not in ("part", "episodes")},
                            identity0.get("seed_offset", 0), identity0.get("repeat", 0)], sort_keys=True)
        h = held.get((where, f"{state.chosen}{HELD_OUT_SUFFIX}")) if state.chosen else None
        if h is not None:
            rows = by_run[h["run_id"]]
            nums = np.asarray(columns(metric, [episode_values(x, values_fn) for x in rows])[0], dtype=float)
            mean, lo, hi, k = interval(nums, metric, 0.05, anytime=False)
            size = int((_identity(h).get("protocol") or {}).get("partition", {}).get("episodes", len(rows)))
            held_out = (mean, lo, hi, len(rows), size)
        out.append(Sweep(str(r0["suite"]), str(r0["split"]), metric.name, bool(metric.percent),
                         str(stopping.get("rule", DEFAULT_RULE)), float(stopping["alpha"]), dict(partition_),
                         int(partition_.get("episodes", upto)), points, state.chosen, held_out,
                         "wilson" if metric.binary else "confidence_sequence"))
    return sorted(out, key=lambda s: (s.suite, s.split))


def describe(s: Sweep) -> list[str]:
    """The lines a table prints below itself for one sweep."""
    scale, unit = (100.0, "") if s.percent else (1.0, "")
    fmt = lambda v: "–" if v is None or math.isnan(v) else f"{scale * v:.1f}{unit}"  # noqa: E731
    p = s.partition
    lines = [f"Checkpoint sweep on {s.suite}/{s.split} ({s.metric}; {len(s.points)} checkpoints raced on "
             f"{s.selection_episodes} selection episodes of {p.get('split_episodes')}, the rest held out: "
             f"{p.get('rule')} v{p.get('version')} partition, seed {p.get('seed')}; {s.rule} v{RULE_VERSION}, "
             f"α = {s.alpha:g} over the race, each pair at α/(K−1)):"]
    for pt in s.points:
        step = f" (step {pt.step})" if pt.step is not None else ""
        if pt.drop is not None:
            how = (f"dropped after {pt.episodes} selection episodes ({pt.drop.by} decided better at episode "
                   f"{pt.drop.decided_at})")
        elif pt.name == s.chosen:
            how = f"chosen after {pt.episodes} selection episodes"
        else:
            how = f"not dropped after {pt.episodes} selection episodes"
        lines.append(f"- {pt.name}{step}: {how}; selection {s.metric} {fmt(pt.mean)}, anytime-valid "
                     f"{1 - s.alpha:.0%} interval [{fmt(pt.lo)}, {fmt(pt.hi)}]")
    if s.chosen is None:
        lines.append("No checkpoint chosen yet (no selection episode stored).")
    elif s.held_out is None:
        lines.append(f"Chosen: {s.chosen}; its held-out run is not in the store (rerun the sweep's command to run it).")
    else:
        mean, lo, hi, n, size = s.held_out
        kind = "Wilson" if s.held_out_kind == "wilson" else "betting confidence sequence"
        lines.append(f"Chosen: {s.chosen}; held-out {s.metric} {fmt(mean)} over {n} of {size} held-out episodes, "
                     f"95% interval [{fmt(lo)}, {fmt(hi)}] ({kind}): the figure to report — the selection "
                     "estimates above chose it, and the highest of several noisy estimates tends to overstate it.")
    return lines
